package io.transit.flight.server.sql;

import io.grpc.Context;
import io.transit.flight.admission.AdmissionLimiter;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.CompileWatch;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.query.QueryPlan;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Caller SQL reaches the engine's compiler ({@link NativeQueryClient#planner()}) only through
 * here. A statement the engine has already compiled costs no parse and passes at once. Any other takes one of {@code compile_per_gateway} slots and one
 * of its caller's {@code compile_per_caller} slots without waiting — a full share is refused
 * {@code RESOURCE_EXHAUSTED} {@code query.compile_busy} (facts {@code bound}, {@code limit},
 * {@code required}) — and parses within {@code compile_timeout_ms} and the call's deadline;
 * when either passes, or the client cancels, the parse is abandoned ({@link CompileWatch}). The
 * parse runs on the calling gRPC service thread, and the service pool is sized with
 * {@code compile_per_gateway} threads to spare, so busy compilations never take the threads
 * that metadata and session calls need.
 *
 * <p>Threads: {@link #compile} runs on gRPC service threads with the call's {@link Context}
 * current; the timer thread and gRPC's cancellation (on whatever thread cancels) only abandon a
 * watch. The limiter is thread-safe; nothing else here is mutable.
 */
final class CompileGate {
  private final Planner planner;
  private final AdmissionLimiter slots;
  private final long timeoutMs;
  private final ScheduledExecutorService timer;

  CompileGate(Planner planner, int perGateway, int perCaller, long timeoutMs,
      ScheduledExecutorService timer) {
    this.planner = planner;
    // The admission limiter's bookkeeping (gateway and caller counts under one monitor, never
    // blocking) is exactly what compile slots need; its refusal is renamed below.
    this.slots = new AdmissionLimiter(perGateway, perCaller);
    this.timeoutMs = timeoutMs;
    this.timer = timer;
  }

  /** Compiles {@code sql} for the caller with {@code principal}; see the class comment. */
  QueryPlan compile(long principal, String sql, TableDeclaration table, long deadlineNanos) {
    if (planner.isCompiled(sql, table)) {
      return planner.plan(sql, table);
    }
    AdmissionLimiter.Permit slot;
    try {
      slot = slots.tryAcquire(principal);
    } catch (GatewayException busy) {
      throw busy(busy);
    }
    try (slot) {
      long remaining = deadlineNanos - System.nanoTime();
      long budget = Math.min(TimeUnit.MILLISECONDS.toNanos(timeoutMs), remaining);
      if (budget <= 0) {
        throw deadline();
      }
      CompileWatch watch = new CompileWatch();
      GatewayException onTimer = budget < TimeUnit.MILLISECONDS.toNanos(timeoutMs)
          ? deadline() : timeout();
      ScheduledFuture<?> bound =
          timer.schedule(() -> watch.abandon(onTimer), budget, TimeUnit.NANOSECONDS);
      Context call = Context.current();
      Context.CancellationListener onCancel = c -> watch.abandon(
          c.getDeadline() != null && c.getDeadline().isExpired() ? deadline() : cancelled());
      call.addListener(onCancel, Runnable::run);
      try {
        return planner.plan(sql, table, watch);
      } finally {
        bound.cancel(false);
        call.removeListener(onCancel);
      }
    }
  }

  private GatewayException timeout() {
    return GatewayException.of(Cause.BUDGET_EXHAUSTED, "query.compile_timeout",
            "the statement did not compile within its time budget")
        .with("budget_ms", timeoutMs)
        .withBudget(new Budget("compile_timeout_ms", timeoutMs, null))
        .withOutcome(Outcome.NOT_ADMITTED)
        .withActions(Action.CHANGE_REQUEST);
  }

  private static GatewayException deadline() {
    return GatewayException.of(Cause.DEADLINE, "flight.deadline",
            "the call's deadline passed while compiling")
        .withOutcome(Outcome.NOT_ADMITTED)
        .withActions(Action.RETRY_SAME_SEQUENCE_AND_SQL);
  }

  private static GatewayException cancelled() {
    return GatewayException.of(Cause.CANCELLED, "flight.cancelled", "the call was cancelled")
        .withOutcome(Outcome.NOT_ADMITTED);
  }

  private static GatewayException busy(GatewayException refused) {
    Object bound = refused.facts().get("bound");
    Object limit = refused.facts().get("limit");
    return GatewayException.of(Cause.ADMISSION_BUSY, "query.compile_busy",
            "too many statements compiling for this " + bound + "; retry later")
        .with("bound", bound)
        .with("limit", limit)
        .with("required", ((Number) limit).longValue() + 1)
        .withBudget(new Budget("compile_per_" + bound, ((Number) limit).longValue(),
            ((Number) limit).longValue() + 1));
  }
}
