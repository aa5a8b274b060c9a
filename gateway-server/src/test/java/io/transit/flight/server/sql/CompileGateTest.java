package io.transit.flight.server.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Context;
import io.transit.flight.admission.AdmissionLimiter;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.nativequery.embedded.PlanCache;
import java.util.Collections;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The gate's three ways to stop a parse, and its slots, over the real compiler. */
class CompileGateTest {
  private static final TableDeclaration TABLE = TableDeclaration.newBuilder()
      .setCatalog("c").setDbSchema("s").setTable("t")
      .addColumns(ColumnDeclaration.newBuilder().setName("id").setLogicalType("INT64")).build();
  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stopTimer() throws InterruptedException {
    timer.shutdownNow();
    assertTrue(timer.awaitTermination(10, TimeUnit.SECONDS));
  }

  /** Within the guard's bounds and slow to parse (8 groups at full nesting). */
  private static String slow(int tag) {
    String group = "(".repeat(32) + String.join(" AND ", Collections.nCopies(100, "id = 1"))
        + ")".repeat(32);
    return "SELECT id FROM t WHERE id = 1 OR " + String.join(" OR ", Collections.nCopies(8, group))
        + " -- " + tag;
  }

  private static GatewayException refused(Cause cause, String code, Runnable call) {
    GatewayException e = assertThrows(GatewayException.class, call::run);
    assertEquals(cause, e.kind(), e::getMessage);
    assertEquals(code, e.code());
    return e;
  }

  @Test
  void aParseOverItsBudgetIsAbandonedAndNothingIsCached() {
    PlanCache plans = PlanCache.withDefaults();
    CompileGate gate = new CompileGate(plans, new AdmissionLimiter(2, 1), 1, timer);
    GatewayException e = refused(Cause.BUDGET_EXHAUSTED, "query.compile_timeout",
        () -> gate.compile(7, slow(1), TABLE, System.nanoTime() + 60 * SECOND));
    assertEquals(1L, e.facts().get("budget_ms"));
    assertEquals(0, plans.size());
  }

  /**
   * The budget is the compiling thread's CPU time: a thread that got no CPU (a process frozen by
   * SIGSTOP, or starved) has spent none of it however long the wall clock ran, so its parse is
   * not refused as too expensive; the call's deadline still stops it.
   */
  @Test
  void aParseThatGotNoCpuHasNotSpentItsBudget() {
    PlanCache plans = PlanCache.withDefaults();
    CompileGate frozen =
        new CompileGate(plans, new AdmissionLimiter(2, 1), 1, timer, thread -> 0L);
    long start = System.nanoTime();
    frozen.compile(7, slow(5), TABLE, System.nanoTime() + 60 * SECOND);
    assertTrue(System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(1),
        "the parse ran longer than its budget by the wall clock");
    assertEquals(1, plans.size());
    refused(Cause.DEADLINE, "flight.deadline", () -> frozen.compile(7, slow(6), TABLE,
        System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5)));
  }

  @Test
  void theCallsDeadlineStopsTheParse() {
    CompileGate gate =
        new CompileGate(PlanCache.withDefaults(), new AdmissionLimiter(2, 1), 60_000, timer);
    refused(Cause.DEADLINE, "flight.deadline",
        () -> gate.compile(7, slow(2), TABLE, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1)));
    refused(Cause.DEADLINE, "flight.deadline",
        () -> gate.compile(7, slow(3), TABLE, System.nanoTime() - 1));
  }

  @Test
  void cancellingTheCallStopsTheParse() throws Exception {
    CompileGate gate =
        new CompileGate(PlanCache.withDefaults(), new AdmissionLimiter(2, 1), 60_000, timer);
    Context.CancellableContext call = Context.current().withCancellation();
    timer.schedule(() -> call.cancel(null), 5, TimeUnit.MILLISECONDS);
    refused(Cause.CANCELLED, "flight.cancelled", () -> call.run(
        () -> gate.compile(7, slow(4), TABLE, System.nanoTime() + 60 * SECOND)));
  }

  @Test
  void slotsAreCountedPerCallerAndFreedAfterwards() throws Exception {
    PlanCache plans = PlanCache.withDefaults();
    CompileGate gate = new CompileGate(plans, new AdmissionLimiter(2, 1), 60_000, timer);
    CountDownLatch parsing = new CountDownLatch(1);
    Context.CancellableContext first = Context.current().withCancellation();
    // Slow parses back to back until cancelled, so caller 7's one slot is nearly always taken.
    Thread holder = new Thread(() -> first.run(() -> {
      parsing.countDown();
      for (int i = 100; i < 10_000 && !first.isCancelled(); i++) {
        try {
          gate.compile(7, slow(i), TABLE, System.nanoTime() + 60 * SECOND);
        } catch (GatewayException refusedOrCancelled) {
          // refused when the main thread held the slot for a moment; cancelled at the end
        }
      }
    }));
    holder.start();
    assertTrue(parsing.await(10, TimeUnit.SECONDS));
    // Caller 7's one slot is taken while its slow parses run; caller 8 still compiles.
    GatewayException busy = null;
    long until = System.nanoTime() + 10 * SECOND;
    while (busy == null && System.nanoTime() < until) {
      // A pause between attempts, or this loop would hold the slot and starve the holder.
      Thread.sleep(10);
      try {
        gate.compile(7, "SELECT id FROM t WHERE id = " + System.nanoTime(), TABLE,
            System.nanoTime() + 60 * SECOND);
      } catch (GatewayException e) {
        busy = e;
      }
    }
    assertTrue(busy != null, "caller 7 was never refused while its slow parse ran");
    assertEquals("query.compile_busy", busy.code());
    assertEquals(Cause.ADMISSION_BUSY, busy.kind());
    assertEquals("caller", busy.facts().get("bound"));
    assertEquals(1, busy.facts().get("limit"));
    assertEquals(2L, busy.facts().get("required"));
    gate.compile(8, "SELECT id FROM t", TABLE, System.nanoTime() + 60 * SECOND);
    first.cancel(null);
    holder.join(10_000);
    assertTrue(!holder.isAlive(), "the holder did not stop after its call was cancelled");
    gate.compile(7, "SELECT id FROM t WHERE id = 3", TABLE, System.nanoTime() + 60 * SECOND);
  }
}
