package io.transit.flight.nativequery.embedded;

import java.time.Duration;

/**
 * Execution leases (docs/native-engine.md "Execution leases"): a replica runs an accepted query
 * only while it holds the query's lease, which lasts {@code lease} from its claim or last renewal
 * and is renewed every third of it; every {@code scan} the replica claims queries whose lease
 * expired. A replica that died or stalls is thus replaced within {@code lease + scan}.
 */
public record LeasePolicy(Duration lease, Duration scan) {
  /** Shortest lease: renewals every third of it must commit well inside it. */
  public static final Duration MIN_LEASE = Duration.ofSeconds(1);
  /** Shortest scan interval: each scan is one indexed journal read. */
  public static final Duration MIN_SCAN = Duration.ofMillis(100);

  public LeasePolicy {
    if (lease.compareTo(MIN_LEASE) < 0 || scan.compareTo(MIN_SCAN) < 0
        || scan.compareTo(lease) > 0) {
      throw new IllegalArgumentException("lease " + lease.toMillis() + " ms, scan "
          + scan.toMillis() + " ms (expected: lease >= 1000 ms, 100 ms <= scan <= lease)");
    }
  }

  /** Every third of the lease: two renewals may fail before the lease lapses. */
  public Duration renewal() {
    return lease.dividedBy(3);
  }

  /** A 10 s lease, scanned every 5 s. */
  public static LeasePolicy defaults() {
    return new LeasePolicy(Duration.ofSeconds(10), Duration.ofSeconds(5));
  }
}
