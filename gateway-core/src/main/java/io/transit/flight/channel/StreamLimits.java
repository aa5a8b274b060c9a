package io.transit.flight.channel;

import java.time.Duration;
import java.util.Objects;

/**
 * The streaming core's limits, all from configuration.
 *
 * @param maxLiveStreams streams that may be open at once; one more is refused with {@code
 *     flight.streams_exhausted}
 * @param perStreamAllocatorLimit byte limit of each stream's child allocator
 * @param creditStallBudget how long a producer may wait for the client to accept data before the
 *     stream is cut off with {@code flight.credit_stall}
 * @param maxPendingBatches batches that may wait on a stream's executor; the readiness gate holds
 *     the producer beyond it, so a fast producer cannot queue unbounded memory
 */
public record StreamLimits(
    int maxLiveStreams,
    long perStreamAllocatorLimit,
    Duration creditStallBudget,
    int maxPendingBatches) {

  public StreamLimits {
    if (maxLiveStreams < 1) {
      throw new IllegalArgumentException("maxLiveStreams: " + maxLiveStreams + " (expected: >= 1)");
    }
    if (perStreamAllocatorLimit < 1) {
      throw new IllegalArgumentException(
          "perStreamAllocatorLimit: " + perStreamAllocatorLimit + " (expected: >= 1)");
    }
    Objects.requireNonNull(creditStallBudget, "creditStallBudget");
    if (creditStallBudget.isNegative() || creditStallBudget.isZero()) {
      throw new IllegalArgumentException(
          "creditStallBudget: " + creditStallBudget + " (expected: > 0)");
    }
    if (maxPendingBatches < 1) {
      throw new IllegalArgumentException(
          "maxPendingBatches: " + maxPendingBatches + " (expected: >= 1)");
    }
  }
}
