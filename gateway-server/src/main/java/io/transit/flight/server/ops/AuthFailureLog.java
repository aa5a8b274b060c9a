package io.transit.flight.server.ops;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs authentication failures on {@code transit.auth}, at most one line per interval: the first
 * failure of an interval is logged with its peer and method, the rest are counted and reported
 * with the next line. The credential is never seen here (the refusal carries no detail), so it
 * cannot be logged.
 *
 * <p>Threads: any gRPC thread; one lock guards the interval state (held for a few field updates).
 */
public final class AuthFailureLog {
  private static final Logger log = LoggerFactory.getLogger("transit.auth");

  private final long intervalNanos;
  private final Object lock = new Object();
  // @GuardedBy("lock")
  private long windowStart;
  // @GuardedBy("lock")
  private boolean logged;
  // @GuardedBy("lock")
  private long suppressed;

  public AuthFailureLog(long intervalNanos) {
    this.intervalNanos = intervalNanos;
    this.windowStart = System.nanoTime() - intervalNanos;
  }

  void failed(String peer, String method) {
    long now = System.nanoTime();
    long alsoFailed;
    synchronized (lock) {
      if (now - windowStart >= intervalNanos) {
        windowStart = now;
        logged = false;
      }
      if (logged) {
        suppressed++;
        return;
      }
      logged = true;
      alsoFailed = suppressed;
      suppressed = 0;
    }
    log.atWarn().addKeyValue("peer", peer != null ? peer : "-").addKeyValue("method", method)
        .addKeyValue("suppressed", alsoFailed)
        .log("authentication failed");
  }
}
