package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class AnonymousAccessLinesTest {
  private static final long SECOND = 1_000_000_000L;

  @Test
  void aSecondsLinesPastTheBoundAreCountedAndReportedByTheNextLineWritten() {
    AnonymousAccessLines lines = new AnonymousAccessLines(3, 0);
    for (int i = 0; i < 3; i++) {
      assertEquals(0, lines.admit(i));
    }
    for (int i = 0; i < 5; i++) {
      assertEquals(AnonymousAccessLines.SUPPRESS, lines.admit(SECOND / 2 + i));
    }
    // The next second: the first line written says how many were not.
    assertEquals(5, lines.admit(SECOND));
    assertEquals(0, lines.admit(SECOND + 1));
    assertEquals(0, lines.admit(SECOND + 2));
    assertEquals(AnonymousAccessLines.SUPPRESS, lines.admit(SECOND + 3));
    assertEquals(1, lines.admit(3 * SECOND));
  }
}
