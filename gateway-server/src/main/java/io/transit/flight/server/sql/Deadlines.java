package io.transit.flight.server.sql;

import io.grpc.Context;
import io.grpc.Deadline;
import java.util.concurrent.TimeUnit;

/**
 * The wait bound of a control RPC: the caller's gRPC deadline if it set one, else the configured
 * default, never more than the configured maximum. Monotonic ({@link System#nanoTime()}).
 */
public final class Deadlines {
  private final long defaultMs;
  private final long maxMs;

  public Deadlines(long defaultMs, long maxMs) {
    this.defaultMs = defaultMs;
    this.maxMs = maxMs;
  }

  /** An absolute {@code System.nanoTime()} deadline for the current call. */
  public long controlDeadlineNanos() {
    long budgetNanos = TimeUnit.MILLISECONDS.toNanos(defaultMs);
    Deadline d = Context.current().getDeadline();
    if (d != null) {
      budgetNanos = Math.max(0, d.timeRemaining(TimeUnit.NANOSECONDS));
    }
    budgetNanos = Math.min(budgetNanos, TimeUnit.MILLISECONDS.toNanos(maxMs));
    return System.nanoTime() + budgetNanos;
  }
}
