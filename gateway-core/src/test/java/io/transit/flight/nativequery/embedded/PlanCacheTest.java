package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.diagnostic.Basis;
import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.nativequery.EngineIdentity;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.CompileWatch;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.query.QueryCompilerTest;
import io.transit.flight.query.QueryPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PlanCacheTest {
  private static final TableDeclaration TABLE = QueryCompilerTest.TABLE;

  @Test
  void aHitReturnsTheCompiledPlan() {
    PlanCache cache = new PlanCache(8, 1 << 16);
    String sql = "SELECT SUM(Fare), COUNT(*) FROM Trips WHERE id BETWEEN 1 AND 9";
    QueryPlan first = cache.plan(sql, TABLE);
    assertEquals(QueryCompiler.compile(sql, TABLE), first);
    // An equal declaration parsed separately (as the engine does from a bundle) hits too.
    TableDeclaration copy = TableDeclaration.newBuilder(TABLE).build();
    assertSame(first, cache.plan(new String(sql.toCharArray()), copy));
    assertEquals(1, cache.size());
  }

  @Test
  void anotherDeclarationMisses() {
    PlanCache cache = new PlanCache(8, 1 << 16);
    String sql = "SELECT Fare FROM Trips";
    QueryPlan nullable = cache.plan(sql, TABLE);
    TableDeclaration notNull = TABLE.toBuilder()
        .setColumns(1, TABLE.getColumns(1).toBuilder().setNullable(false))
        .build();
    QueryPlan required = cache.plan(sql, notNull);
    assertTrue(nullable.outputs().get(0).nullable());
    assertEquals(QueryCompiler.compile(sql, notNull), required);
    assertNotEquals(nullable, required);
    // A difference the plan does not show still keys a separate entry.
    TableDeclaration moved = TABLE.toBuilder().setObjectId(77).build();
    QueryPlan same = cache.plan(sql, moved);
    assertEquals(nullable, same);
    assertNotSame(nullable, same);
    assertEquals(3, cache.size());
    assertSame(nullable, cache.plan(sql, TABLE));
  }

  @Test
  void entryBoundEvictsTheLeastRecentlyUsed() {
    PlanCache cache = new PlanCache(2, 1 << 16);
    QueryPlan a = cache.plan("SELECT id FROM Trips", TABLE);
    QueryPlan b = cache.plan("SELECT Fare FROM Trips", TABLE);
    assertSame(a, cache.plan("SELECT id FROM Trips", TABLE)); // a is now the most recent
    cache.plan("SELECT seats FROM Trips", TABLE);
    assertEquals(2, cache.size());
    assertSame(a, cache.plan("SELECT id FROM Trips", TABLE));
    QueryPlan b2 = cache.plan("SELECT Fare FROM Trips", TABLE);
    assertNotSame(b, b2);
    assertEquals(b, b2);
    assertEquals(2, cache.size());
  }

  @Test
  void characterBoundHoldsAndHugeStatementsAreNotCached() {
    PlanCache cache = new PlanCache(100, 240); // at most 30 characters per cached statement
    for (int i = 0; i < 20; i++) {
      cache.plan("SELECT id FROM Trips LIMIT " + (100 + i), TABLE); // 30 characters each
    }
    assertEquals(8, cache.size());
    String huge = "SELECT id FROM Trips WHERE id = 1234567";
    QueryPlan plan = cache.plan(huge, TABLE);
    assertEquals(QueryCompiler.compile(huge, TABLE), plan);
    assertNotSame(plan, cache.plan(huge, TABLE));
    assertEquals(8, cache.size());
  }

  @Test
  void failuresAreThrownEachTimeAndNotCached() {
    PlanCache cache = new PlanCache(8, 1 << 16);
    for (int i = 0; i < 2; i++) {
      GatewayException e = assertThrows(GatewayException.class,
          () -> cache.plan("SELECT nope FROM Trips", TABLE));
      GatewayException direct = assertThrows(GatewayException.class,
          () -> QueryCompiler.compile("SELECT nope FROM Trips", TABLE));
      assertEquals(direct.code(), e.code());
      assertEquals(direct.getMessage(), e.getMessage());
    }
    assertEquals(0, cache.size());
  }

  @Test
  void aRefusalNamesTheCompilerAsWitnessAndItsFrozenBasis() {
    EngineIdentity engine = new EngineIdentity("transit-embedded", "9.9.9");
    PlanCache cache = new PlanCache(8, 1 << 16, engine);
    GatewayException e = assertThrows(GatewayException.class,
        () -> cache.plan("SELECT nope FROM Trips", TABLE));
    assertEquals(Witness.compiler("query.unknown_column"), e.witness());
    assertEquals(Basis.of(DeclarationFingerprint.of(TABLE), "transit-embedded", "9.9.9"),
        e.basis());
    // A compiler bound names its exact budget.
    GatewayException deep = assertThrows(GatewayException.class, () -> cache.plan(
        "SELECT Fare FROM Trips WHERE " + "(".repeat(40) + "id = 1" + ")".repeat(40), TABLE));
    assertEquals(List.of(new Budget("nesting", 32, 40L)), deep.budgets());
    assertEquals("query.too_complex", deep.witness().code());
    // The watch's own failure (timeout, deadline, cancellation) is the gate's: passed unchanged.
    CompileWatch watch = new CompileWatch();
    GatewayException gate = GatewayException.of(
        io.transit.flight.diagnostic.Cause.DEADLINE, "flight.deadline", "deadline");
    watch.abandon(gate);
    assertSame(gate, assertThrows(GatewayException.class,
        () -> cache.plan("SELECT Fare FROM Trips WHERE id = 7", TABLE, watch)));
  }

  @Test
  void concurrentCallersGetEqualPlans() throws Exception {
    PlanCache cache = new PlanCache(4, 1 << 16);
    List<String> sqls = List.of("SELECT id FROM Trips", "SELECT COUNT(*) FROM Trips",
        "SELECT SUM(Fare) FROM Trips WHERE id > 3", "SELECT cell FROM Trips LIMIT 5",
        "SELECT id FROM Trips WHERE Fare IS NULL", "SELECT Fare FROM Trips");
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Void>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int offset = t;
        done.add(pool.submit(() -> {
          for (int i = 0; i < 60; i++) {
            String sql = sqls.get((i + offset) % sqls.size());
            assertEquals(QueryCompiler.compile(sql, TABLE), cache.plan(sql, TABLE));
          }
          return null;
        }));
      }
      for (Future<Void> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
    assertTrue(cache.size() <= 4);
  }
}
