package io.transit.flight.nativequery.embedded;

import java.time.Duration;

/**
 * How long retained results are kept: {@link Retention} releases a succeeded result older than
 * {@code maxAge} (since it finished), and the oldest results while all unreleased results
 * together list more than {@code maxBytes}. A segment shared by two results counts twice, so the
 * byte bound is conservative. Sweeps run every {@code interval}.
 *
 * <p>{@code historyAge}, when not zero, also bounds the journal's history: a statement that
 * finished longer ago than that, and whose result is released or that failed, has its query row,
 * upload and command records forgotten (docs/limits.md "What the journal keeps"). Zero keeps
 * every statement's history for good, the default. It is at least {@code maxAge}, so a result
 * the age bound still keeps never loses its history.
 */
public record RetentionPolicy(Duration maxAge, long maxBytes, Duration interval,
    Duration historyAge) {
  public RetentionPolicy {
    if (maxAge.isNegative() || maxAge.isZero() || maxBytes < 1 || interval.isNegative()
        || interval.isZero()) {
      throw new IllegalArgumentException("retention age, bytes and interval must be > 0");
    }
    if (!historyAge.isZero() && historyAge.compareTo(maxAge) < 0) {
      throw new IllegalArgumentException("the history age must be 0 or at least the result age");
    }
  }

  /** A policy that keeps every statement's history. */
  public RetentionPolicy(Duration maxAge, long maxBytes, Duration interval) {
    this(maxAge, maxBytes, interval, Duration.ZERO);
  }

  /** Whether finished statements' history is forgotten after {@link #historyAge}. */
  public boolean forgetsHistory() {
    return !historyAge.isZero();
  }

  /** Seven days, 10 GiB, a sweep every 10 s, history kept (docs/limits.md "Retained results"). */
  public static RetentionPolicy defaults() {
    return new RetentionPolicy(Duration.ofDays(7), 10L << 30, Duration.ofSeconds(10));
  }
}
