package io.transit.flight.server.cli;

import java.util.concurrent.atomic.AtomicBoolean;
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

  // A SIGHUP before the daemon's own handler is in place: held for it (any signal thread).
  private static final AtomicBoolean heldHangup = new AtomicBoolean();
  private static volatile Runnable hangup = () -> heldHangup.set(true);
  // Written by holdHangups, on the main thread, before anything reads them.
  private static volatile boolean hangupsTaken;
  private static volatile String hangupsUnavailable;

  /**
   * The main thread, first thing: takes SIGHUP over from the JVM (whose default ends the
   * process, exit 129) and holds one that arrives before {@link #onHangup}. Until 2026-12-07 the
   * handler came only once the configuration was read, and a SIGHUP in the first second of a
   * start (a reload sent as the service started) ended it. The JVM's own start, before {@code
   * main}, remains a window no handler covers.
   */
  static void holdHangups() {
    hangupsTaken = true;
    try {
      if (Signal.handle(new Signal("HUP"), sig -> hangup.run()) == SignalHandler.SIG_IGN) {
        // The JVM leaves a signal ignored when the parent ignored it (nohup does so for SIGHUP)
        // and then installs nothing, so reloads would silently never happen.
        hangupsUnavailable = "SIGHUP is ignored in this process (started under nohup?):"
            + " configuration reload by signal is unavailable; restart without it";
      }
    } catch (IllegalArgumentException e) {
      hangupsUnavailable = "SIGHUP reload unavailable on this platform";
    }
  }

  /**
   * Makes {@code action} the SIGHUP handler, running it at once for one held since {@link
   * #holdHangups}. Returns what the operator must be told when reloads by signal cannot happen,
   * or null; the caller logs it once the daemon serves (a start that is refused says only why).
   */
  static String onHangup(Runnable action) {
    if (!hangupsTaken) {
      holdHangups(); // a start not through main (in-process tests)
    }
    hangup = action;
    if (heldHangup.getAndSet(false)) {
      action.run();
    }
    return hangupsUnavailable;
  }
}
