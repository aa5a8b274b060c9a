package io.transit.flight.threads;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Standard error captured while open: slf4j-simple, the tests' logging binding, looks up {@code
 * System.err} at each line, so what a class logs lands here. Restored on close; use one at a
 * time (tests of a class run one after another).
 */
final class CapturedErr implements AutoCloseable {
  private final PrintStream saved = System.err;
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

  CapturedErr() {
    System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
  }

  /** Whether {@code text} was written within 5 s (a worker or the timer logs asynchronously). */
  boolean awaitText(String text) throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (!text().contains(text)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  String text() {
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    System.setErr(saved);
  }
}
