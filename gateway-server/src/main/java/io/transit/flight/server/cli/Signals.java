package io.transit.flight.server.cli;

import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Signal wiring. The JVM runs each signal's handler on a thread it starts for that signal, so
 * two signals' handlers can run at once. SIGHUP reload work is short (file reads, one journal
 * commit bounded by the journal's timeouts, a map swap) and reloads are serialized here: two
 * HUPs in quick succession reload one after the other, the later one reading the file last, so
 * the newer file is the one in force and no caller's missing credential is generated twice.
 * SIGTERM and SIGINT are taken over from the JVM so that a requested stop drains and then exits
 * 0 (the JVM's default exits 143/130).
 */
final class Signals {
  /** Held for the whole of a reload. */
  private static final Object RELOADING = new Object();

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

  /** Runs {@code action} while no reload runs (and none starts until it returns). */
  static void serialized(Runnable action) {
    synchronized (RELOADING) {
      action.run();
    }
  }

  /**
   * Installs {@code action} as the SIGHUP handler. Returns what the operator must be told when
   * reloads by signal cannot happen, or null; the caller logs it once the daemon serves (a start
   * that is refused says only why).
   */
  static String onHangup(Runnable action) {
    try {
      SignalHandler reload = sig -> {
        synchronized (RELOADING) {
          action.run();
        }
      };
      if (Signal.handle(new Signal("HUP"), reload) == SignalHandler.SIG_IGN) {
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
