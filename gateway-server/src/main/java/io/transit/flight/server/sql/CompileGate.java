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
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongUnaryOperator;

/**
 * Caller SQL reaches the engine's compiler ({@link NativeQueryClient#planner()}) only through
 * here. A statement the engine has already compiled costs no parse and passes at once. Any other takes one of {@code compile_per_gateway} slots and one
 * of its caller's {@code compile_per_caller} slots without waiting — a full share is refused
 * {@code RESOURCE_EXHAUSTED} {@code query.compile_busy} (facts {@code bound}, {@code limit},
 * {@code required}) — and parses within {@code compile_timeout_ms} of the compiling thread's CPU
 * time and within the call's deadline; when either runs out, or the client cancels, the parse is
 * abandoned ({@link CompileWatch}). The budget is CPU time, not wall-clock time, because only CPU
 * time says the statement is too expensive (the refusal's action is {@code change_request}): a
 * process frozen (SIGSTOP, a long GC pause, a suspended VM) or starved of CPU mid-parse has not
 * spent its callers' budget, and a statement refused for that would fail for good although a
 * retry would compile it. The call's deadline, which is wall-clock, still bounds the wait. The
 * parse runs on the calling gRPC service thread, and the service pool is sized with
 * {@code compile_per_gateway} threads to spare, so busy compilations never take the threads
 * that metadata and session calls need.
 *
 * <p>Threads: built once on the main thread by {@code GatewayServer}; {@link #compile} runs on
 * gRPC service threads with the call's {@link Context} current; gRPC's cancellation (on whatever
 * thread cancels) only abandons a watch, and the timer thread abandons it or re-arms the parse's
 * {@link Bound}. The limiter is thread-safe; the one {@code Bound} per parse documents its own
 * fields; nothing else here is mutable.
 */
public final class CompileGate {
  private final Planner planner;
  private final AdmissionLimiter slots;
  private final long timeoutMs;
  private final ScheduledExecutorService timer;
  private final LongUnaryOperator cpuNanos;

  /**
   * {@code slots} is this gate's own limiter, sized {@code compile_per_gateway} and {@code
   * compile_per_caller} and shared with nothing else: the admission limiter's bookkeeping
   * (gateway and caller counts under one monitor, never blocking) is exactly what compile slots
   * need, and its refusal is renamed here ({@code query.compile_busy}).
   */
  public CompileGate(Planner planner, AdmissionLimiter slots, long timeoutMs,
      ScheduledExecutorService timer) {
    this(planner, slots, timeoutMs, timer, threadCpuClock());
  }

  /**
   * {@code cpuNanos} maps a thread id to that thread's CPU time in nanoseconds (the JVM's thread
   * CPU clock; tests give a clock of a thread that was frozen).
   */
  CompileGate(Planner planner, AdmissionLimiter slots, long timeoutMs,
      ScheduledExecutorService timer, LongUnaryOperator cpuNanos) {
    this.planner = planner;
    this.slots = slots;
    this.timeoutMs = timeoutMs;
    this.timer = timer;
    this.cpuNanos = cpuNanos;
  }

  /**
   * The JVM's per-thread CPU clock; where the JVM has none, wall-clock time (the budget then
   * counts frozen time as well, as before).
   */
  private static LongUnaryOperator threadCpuClock() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    if (threads.isThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled()) {
      return threads::getThreadCpuTime;
    }
    return id -> System.nanoTime();
  }

  /** Compiles {@code sql} for the caller with {@code principal}; see the class comment. */
  QueryPlan compile(long principal, String sql, TableDeclaration table, long deadlineNanos) {
    QueryPlan hit = planner.cached(sql, table);
    if (hit != null) {
      return hit;
    }
    AdmissionLimiter.Permit slot;
    try {
      slot = slots.tryAcquire(principal);
    } catch (GatewayException busy) {
      throw busy(busy);
    }
    try (slot) {
      if (deadlineNanos - System.nanoTime() <= 0) {
        throw deadline();
      }
      CompileWatch watch = new CompileWatch();
      Bound bound = new Bound(watch, Thread.currentThread().getId(), deadlineNanos);
      try {
        bound.arm(TimeUnit.MILLISECONDS.toNanos(timeoutMs));
      } catch (java.util.concurrent.RejectedExecutionException stopped) {
        // The timer is stopped with the gateway: no parse starts without its bound.
        throw new GatewayException(Cause.TRANSPORT, "flight.shutting_down",
                "the server is shutting down", stopped)
            .withOutcome(Outcome.NOT_ADMITTED)
            .withActions(Action.RETRY_SAME_SEQUENCE_AND_SQL);
      }
      Context call = Context.current();
      Context.CancellationListener onCancel = c -> watch.abandon(
          c.getDeadline() != null && c.getDeadline().isExpired() ? deadline() : cancelled());
      call.addListener(onCancel, Runnable::run);
      try {
        return planner.plan(sql, table, watch);
      } finally {
        bound.disarm();
        call.removeListener(onCancel);
      }
    }
  }

  /**
   * The timer over one parse: it fires when the CPU budget could at the earliest be spent or the
   * deadline passes, whichever is first, and then either abandons the parse or, when the
   * compiling thread has had less CPU than the budget (it was frozen or starved), waits again
   * for the rest of it.
   *
   * <p>Threads: {@link #arm} runs first on the compiling thread and then on the timer thread;
   * {@link #disarm} on the compiling thread. {@code next} is guarded by this object's monitor,
   * so a disarm and a re-arm cannot cross.
   */
  private final class Bound {
    private final CompileWatch watch;
    private final long thread;
    private final long deadlineNanos;
    private final long cpuBudget;
    private final long cpuStart;
    private ScheduledFuture<?> next; // guarded by this; null once disarmed

    Bound(CompileWatch watch, long thread, long deadlineNanos) {
      this.watch = watch;
      this.thread = thread;
      this.deadlineNanos = deadlineNanos;
      this.cpuBudget = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
      this.cpuStart = cpuNanos.applyAsLong(thread);
    }

    synchronized void arm(long cpuLeft) {
      long wait = Math.min(cpuLeft, deadlineNanos - System.nanoTime());
      next = timer.schedule(this::fire, Math.max(wait, 0), TimeUnit.NANOSECONDS);
    }

    private void fire() {
      if (deadlineNanos - System.nanoTime() <= 0) {
        watch.abandon(deadline());
        return;
      }
      long used = cpuNanos.applyAsLong(thread) - cpuStart;
      if (used < 0) {
        return; // the thread has ended (-1): its parse is over and the compile has returned
      }
      if (used >= cpuBudget) {
        watch.abandon(timeout());
        return;
      }
      synchronized (this) {
        if (next != null) {
          // At least a millisecond, so a starved thread is not polled in a busy loop.
          arm(Math.max(cpuBudget - used, TimeUnit.MILLISECONDS.toNanos(1)));
        }
      }
    }

    synchronized void disarm() {
      next.cancel(false);
      next = null;
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
