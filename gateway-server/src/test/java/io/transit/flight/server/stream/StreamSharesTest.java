package io.transit.flight.server.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import org.junit.jupiter.api.Test;

class StreamSharesTest {
  @Test
  void aCallerOverItsShareIsRefusedWithItsOwnLimitWhileAnotherIsServed() {
    StreamShares shares = new StreamShares(2);
    Runnable a1 = shares.acquire("a");
    shares.acquire("a");
    GatewayException refused = assertThrows(GatewayException.class, () -> shares.acquire("a"));
    assertEquals(Cause.BUDGET_EXHAUSTED, refused.kind());
    assertEquals("flight.caller_streams_exhausted", refused.code());
    assertEquals("caller", refused.facts().get("bound"));
    assertEquals(2, refused.facts().get("limit"));
    assertEquals(3L, refused.facts().get("required"));
    shares.acquire("b");
    assertEquals(1, shares.held("b"));
    a1.run();
    a1.run(); // a second release of the same slot gives nothing back twice
    assertEquals(1, shares.held("a"));
    shares.acquire("a");
    assertEquals(2, shares.held("a"));
  }
}
