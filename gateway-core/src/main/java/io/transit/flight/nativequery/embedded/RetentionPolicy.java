package io.transit.flight.nativequery.embedded;

import java.time.Duration;

/**
 * How long retained results are kept: {@link Retention} releases a succeeded result older than
 * {@code maxAge} (since it finished), and the oldest results while all unreleased results
 * together list more than {@code maxBytes}. A segment shared by two results counts twice, so the
 * byte bound is conservative. Sweeps run every {@code interval}.
 */
public record RetentionPolicy(Duration maxAge, long maxBytes, Duration interval) {
  public RetentionPolicy {
    if (maxAge.isNegative() || maxAge.isZero() || maxBytes < 1 || interval.isNegative()
        || interval.isZero()) {
      throw new IllegalArgumentException("retention age, bytes and interval must be > 0");
    }
  }

  /** Seven days, 10 GiB, a sweep every 10 s (docs/limits.md "Retained results"). */
  public static RetentionPolicy defaults() {
    return new RetentionPolicy(Duration.ofDays(7), 10L << 30, Duration.ofSeconds(10));
  }
}
