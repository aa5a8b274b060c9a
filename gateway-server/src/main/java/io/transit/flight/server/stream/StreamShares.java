package io.transit.flight.server.stream;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Each caller's share of the live result streams ({@code max_live_streams_per_caller}): one
 * caller holding its share of DoGets leaves the rest of {@code max_live_streams} to the others.
 * A caller over its share is refused RESOURCE_EXHAUSTED {@code flight.caller_streams_exhausted}
 * with the facts {@code bound} = {@code caller}, {@code limit} and {@code required}.
 *
 * <p>Threads: {@link #acquire} runs on the gRPC thread that starts a DoGet; the returned release
 * runs once, on whichever thread releases the stream (its permit and memory returned, after its
 * producer ended: StreamRegistry#open). The per-caller counts live in a concurrent
 * map whose entries are removed when they drop to zero, so it holds only callers with streams.
 */
public final class StreamShares {
  private final int perCaller;
  private final ConcurrentHashMap<String, Integer> live = new ConcurrentHashMap<>();

  public StreamShares(int perCaller) {
    if (perCaller < 1) {
      throw new IllegalArgumentException("perCaller: " + perCaller + " (expected: >= 1)");
    }
    this.perCaller = perCaller;
  }

  /**
   * Takes one of {@code caller}'s stream slots; the result gives it back (idempotent).
   *
   * @throws GatewayException when the caller already holds its share
   */
  public Runnable acquire(String caller) {
    boolean[] taken = {false};
    live.compute(caller, (k, n) -> {
      int held = n == null ? 0 : n;
      if (held >= perCaller) {
        return n;
      }
      taken[0] = true;
      return held + 1;
    });
    if (!taken[0]) {
      throw GatewayException.of(Cause.BUDGET_EXHAUSTED, "flight.caller_streams_exhausted",
              "this caller already holds its share of " + perCaller + " live result streams")
          .with("bound", "caller")
          .with("limit", perCaller)
          .with("required", (long) perCaller + 1)
          .withOutcome(Outcome.NOT_ADMITTED)
          .withActions(Action.RETRY_LATER);
    }
    AtomicBoolean released = new AtomicBoolean();
    return () -> {
      if (released.compareAndSet(false, true)) {
        live.computeIfPresent(caller, (k, n) -> n <= 1 ? null : n - 1);
      }
    };
  }

  /** Streams {@code caller} holds now. */
  public int held(String caller) {
    return live.getOrDefault(caller, 0);
  }
}
