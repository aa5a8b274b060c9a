package io.transit.flight.server.request;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ClientFaultLogTest {
  @Test
  void oneLinePerCallerPerIntervalTheRestCounted() {
    // A clock the test moves: a slow first log line (logging's own start) takes no interval.
    AtomicLong clock = new AtomicLong(1_000);
    ClientFaultLog log = new ClientFaultLog(TimeUnit.MILLISECONDS.toNanos(200), clock::get);
    assertTrue(log.fault("a", "m", "flight.invalid_protobuf"));
    for (int i = 0; i < 1000; i++) {
      clock.addAndGet(TimeUnit.MICROSECONDS.toNanos(199));
      assertFalse(log.fault("a", "m", "flight.invalid_protobuf"));
    }
    // Another caller's fault is logged in the same interval: the limit is per caller.
    assertTrue(log.fault("b", "m", "flight.invalid_protobuf"));
    clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
    assertTrue(log.fault("a", "m", "flight.invalid_protobuf"), "the interval has passed");
  }

  @Test
  void longFieldsAreCutSoALineStaysBounded() {
    ClientFaultLog log = new ClientFaultLog(TimeUnit.SECONDS.toNanos(10));
    assertTrue(log.fault("c".repeat(10_000), "m".repeat(10_000), "x".repeat(10_000)));
  }
}
