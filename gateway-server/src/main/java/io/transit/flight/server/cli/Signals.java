package io.transit.flight.server.cli;

import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Signal wiring. The JVM runs each signal's handler on a thread it starts for that signal, so
 * two signals' handlers can run at once ({@link Reloads} serializes the reloads). SIGTERM and
 * SIGINT are taken over from the JVM so that a requested stop drains and then exits 0 (the JVM's
 * default exits 143/130).
 */
final class Signals {
  private Signals() {}

  static void onTerminate(Runnable action) {
    for (String name : new String[] {"TERM", "INT"}) {
      try {
        Signal.handle(new Signal(name), sig -> action.run());
      } catch (IllegalArgumentException e) {
        // Not available here (or reserved by the JVM's own options): the shutdown hook remains.
      }
    }
  }

  /**
   * Installs {@code action} as the SIGHUP handler. Returns what the operator must be told when
   * reloads by signal cannot happen, or null; the caller logs it once the daemon serves (a start
   * that is refused says only why).
   */
  static String onHangup(Runnable action) {
    try {
      if (Signal.handle(new Signal("HUP"), sig -> action.run()) == SignalHandler.SIG_IGN) {
        // The JVM leaves a signal ignored when the parent ignored it (nohup does so for SIGHUP)
        // and then installs nothing, so reloads would silently never happen.
        return "SIGHUP is ignored in this process (started under nohup?): configuration"
            + " reload by signal is unavailable; restart without it";
      }
      return null;
    } catch (IllegalArgumentException e) {
      return "SIGHUP reload unavailable on this platform";
    }
  }
}
