package io.transit.flight.server.request;

import io.grpc.Context;
import io.grpc.Deadline;
import java.util.concurrent.TimeUnit;

/**
 * The time bounds of the two RPC kinds. A control RPC (GetFlightInfo, GetSchema, actions) and a
 * data RPC (DoGet) each get the caller's gRPC deadline if it set one, else their configured
 * default, never more than their configured maximum. Monotonic ({@link System#nanoTime()}).
 * Stateless; called on the gRPC call's thread, where the call's {@link Context} is current.
 */
public final class Deadlines {
  private final long controlDefaultMs;
  private final long controlMaxMs;
  private final long dataDefaultMs;
  private final long dataMaxMs;

  public Deadlines(long controlDefaultMs, long controlMaxMs, long dataDefaultMs, long dataMaxMs) {
    this.controlDefaultMs = controlDefaultMs;
    this.controlMaxMs = controlMaxMs;
    this.dataDefaultMs = dataDefaultMs;
    this.dataMaxMs = dataMaxMs;
  }

  /** An absolute {@code System.nanoTime()} deadline for the current control call. */
  public long controlDeadlineNanos() {
    return System.nanoTime() + budgetNanos(controlDefaultMs, controlMaxMs);
  }

  /** How long the current data call's stream may run, in nanoseconds from now. */
  public long dataBudgetNanos() {
    return budgetNanos(dataDefaultMs, dataMaxMs);
  }

  private static long budgetNanos(long defaultMs, long maxMs) {
    long budgetNanos = TimeUnit.MILLISECONDS.toNanos(defaultMs);
    Deadline d = Context.current().getDeadline();
    if (d != null) {
      budgetNanos = Math.max(0, d.timeRemaining(TimeUnit.NANOSECONDS));
    }
    return Math.min(budgetNanos, TimeUnit.MILLISECONDS.toNanos(maxMs));
  }
}
