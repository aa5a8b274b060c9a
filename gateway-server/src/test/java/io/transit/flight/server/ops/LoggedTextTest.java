package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LoggedTextTest {
  @Test
  void aPathCannotEndTheLineOrAddAFieldOfItsOwn() {
    assertEquals("/arrow.flight.protocol.FlightService/DoGet",
        LoggedText.of("/arrow.flight.protocol.FlightService/DoGet", 128));
    String forged = LoggedText.of("/x\n2026-12-01T14:37:15.845Z INFO  access - rpc caller=admin",
        1000);
    assertTrue(forged.startsWith("/x\\x0A2026-12-01T14\\x3A37"), forged);
    assertTrue(!forged.contains("\n") && !forged.contains(" ") && !forged.contains("="), forged);
    assertEquals("/\\xC3\\xA9\\x1B", LoggedText.of("/\u00e9\u001b", 128));
    assertEquals("-", LoggedText.of(null, 128));
  }

  @Test
  void aLongPathIsCutAtTheBoundNeverInsideAnEscape() {
    assertEquals("x".repeat(128) + "...", LoggedText.of("x".repeat(4000), 128));
    assertEquals("xx...", LoggedText.of("xx\n", 4));
    assertEquals("xx\\x0A", LoggedText.of("xx\n", 6));
  }
}
