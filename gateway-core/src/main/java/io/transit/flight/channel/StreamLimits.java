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
 * @param residentBatches decoded batches a stream may hold at once: the one its producer builds
 *     or holds plus those handed off and not yet written (the stream root holds none between
 *     writes). The producer builds the next batch only once the hand-off leaves room for it, and
 *     hands a batch off only while there is room, so a fast producer cannot queue memory and a
 *     stream's allocator holds at most this many batches; the gateway uses 1
 */
public record StreamLimits(
    int maxLiveStreams,
    long perStreamAllocatorLimit,
    Duration creditStallBudget,
    int residentBatches) {

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
    if (residentBatches < 1) {
      throw new IllegalArgumentException(
          "residentBatches: " + residentBatches + " (expected: >= 1)");
    }
  }
}
