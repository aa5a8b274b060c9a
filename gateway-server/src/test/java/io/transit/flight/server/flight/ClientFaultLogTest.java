package io.transit.flight.server.flight;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ClientFaultLogTest {
  @Test
  void oneLinePerCallerPerIntervalTheRestCounted() throws InterruptedException {
    ClientFaultLog log = new ClientFaultLog(TimeUnit.MILLISECONDS.toNanos(200));
    assertTrue(log.fault("a", "m", "flight.invalid_protobuf"));
    for (int i = 0; i < 1000; i++) {
      assertFalse(log.fault("a", "m", "flight.invalid_protobuf"));
    }
    // Another caller's fault is logged in the same interval: the limit is per caller.
    assertTrue(log.fault("b", "m", "flight.invalid_protobuf"));
    Thread.sleep(250);
    assertTrue(log.fault("a", "m", "flight.invalid_protobuf"));
  }

  @Test
  void longFieldsAreCutSoALineStaysBounded() {
    ClientFaultLog log = new ClientFaultLog(TimeUnit.SECONDS.toNanos(10));
    assertTrue(log.fault("c".repeat(10_000), "m".repeat(10_000), "x".repeat(10_000)));
  }
}
