package io.transit.flight.server.ops;

/**
 * How many access lines calls without a caller may write: at most {@code perSecond} in each
 * second, the rest counted and reported by the first line written after them. Such calls cost
 * their peer nothing but a stream (a reset one, one refused before authentication): 41,000 a
 * second from one host wrote 3–4 MB of access log a second (2026-12-07), enough to push the
 * lines of every other caller out of a rate-limited journal. Calls that named their caller are
 * not limited: they passed authentication and each one's line is the operator's record.
 *
 * <p>Threads: any gRPC thread (a stream's close); one lock guards the window (a few field
 * updates).
 */
final class AnonymousAccessLines {
  /** {@link #admit}'s answer for a line not to be written. */
  static final long SUPPRESS = -1;

  private final int perSecond;
  private final Object lock = new Object();
  // @GuardedBy("lock")
  private long windowStart;
  // @GuardedBy("lock")
  private int written;
  // @GuardedBy("lock")
  private long suppressed;

  AnonymousAccessLines(int perSecond, long nowNanos) {
    if (perSecond < 1) {
      throw new IllegalArgumentException("perSecond: " + perSecond + " (expected: >= 1)");
    }
    this.perSecond = perSecond;
    this.windowStart = nowNanos;
  }

  /**
   * Any thread: {@link #SUPPRESS} when this line is not to be written, else how many were
   * suppressed since the last one written (0 mostly), which the caller reports first.
   */
  long admit(long nowNanos) {
    synchronized (lock) {
      if (nowNanos - windowStart >= 1_000_000_000L) {
        windowStart = nowNanos;
        written = 0;
      }
      if (written >= perSecond) {
        suppressed++;
        return SUPPRESS;
      }
      written++;
      long before = suppressed;
      suppressed = 0;
      return before;
    }
  }
}
