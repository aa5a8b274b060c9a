package io.transit.flight.server.cli;

import sun.misc.Signal;

/**
 * SIGHUP wiring. The handler runs on the JVM's signal dispatch thread; reload work there is
 * short (file reads, a map swap) and serialized by the JVM, so reloads never overlap.
 */
final class Signals {
  private Signals() {}

  static void onHangup(Runnable action) {
    try {
      Signal.handle(new Signal("HUP"), sig -> action.run());
    } catch (IllegalArgumentException e) {
      System.err.println("transit-flight: SIGHUP reload unavailable on this platform");
    }
  }
}
