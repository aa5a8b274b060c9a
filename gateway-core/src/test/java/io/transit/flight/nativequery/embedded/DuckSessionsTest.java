package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DuckSessionsTest {
  @TempDir java.nio.file.Path state;
  private RootAllocator allocator;
  private DuckTables tables;
  private DuckSessions sessions;

  @BeforeEach
  void open() throws Exception {
    allocator = new RootAllocator();
    tables = DuckTables.open(List.of(), DuckSettings.defaults(), state, allocator);
    sessions = new DuckSessions(tables);
  }

  @AfterEach
  void close() throws Exception {
    sessions.close();
    tables.close();
    assertEquals(0, allocator.getAllocatedMemory());
    allocator.close();
  }

  private static long plusOne(PreparedStatement p, long value) throws Exception {
    p.setLong(1, value);
    try (ResultSet r = p.executeQuery()) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  @Test
  void aSessionGivenBackIsReusedWithItsPreparedStatements() throws Exception {
    DuckSessions.Session first = sessions.borrow();
    PreparedStatement p = first.prepared("SELECT CAST(? AS BIGINT) + 1");
    assertEquals(42, plusOne(p, 41));
    sessions.giveBack(first);
    assertEquals(1, sessions.idleCount());

    DuckSessions.Session again = sessions.borrow();
    assertSame(first, again, "the idle session is reused");
    assertSame(p, again.prepared("SELECT CAST(? AS BIGINT) + 1"), "and its statement");
    assertEquals(8, plusOne(p, 7), "parameters are rebound on every run");
    DuckSessions.Session second = sessions.borrow();
    assertNotSame(again, second, "a concurrent run gets its own session");
    sessions.giveBack(again);
    sessions.giveBack(second);
    assertEquals(2, sessions.idleCount());
  }

  @Test
  void statementsPerSessionAreBoundedLeastRecentlyUsedFirst() throws Exception {
    DuckSessions.Session s = sessions.borrow();
    PreparedStatement eldest = s.prepared("SELECT CAST(? AS BIGINT) + 0");
    for (int i = 1; i <= DuckSessions.STATEMENTS_PER_SESSION; i++) {
      s.prepared("SELECT CAST(? AS BIGINT) + " + i);
    }
    assertEquals(DuckSessions.STATEMENTS_PER_SESSION, s.statementCount());
    assertTrue(eldest.isClosed(), "the least recently used statement was evicted and closed");
    assertEquals(6, plusOne(s.prepared("SELECT CAST(? AS BIGINT) + 1"), 5));
    sessions.giveBack(s);
  }

  @Test
  void discardedAndLateSessionsAreClosed() throws Exception {
    DuckSessions.Session failed = sessions.borrow();
    PreparedStatement p = failed.prepared("SELECT CAST(? AS BIGINT) + 1");
    sessions.discard(failed);
    assertTrue(p.isClosed());
    assertEquals(0, sessions.idleCount(), "a failed run's session is not reused");

    DuckSessions.Session idle = sessions.borrow();
    PreparedStatement q = idle.prepared("SELECT CAST(? AS BIGINT) + 2");
    DuckSessions.Session late = sessions.borrow();
    PreparedStatement r = late.prepared("SELECT CAST(? AS BIGINT) + 3");
    sessions.giveBack(idle);
    sessions.close();
    assertTrue(q.isClosed(), "close() closes idle sessions");
    sessions.giveBack(late);
    assertTrue(r.isClosed(), "a session given back after close() is closed");
    assertEquals(0, sessions.idleCount());
  }

  /**
   * An early run abandoned while its statement is inside DuckDB (an aggregate reads no batch
   * between which it could stop) cancels it there, and says so, so that its session is
   * discarded. Until 2026-12-06 an abandoned aggregate ran to its end for nothing.
   */
  @Test
  void anAbandonedEarlyRunCancelsItsStatementInsideDuckDb() throws Exception {
    EarlyRuns.Early early = new EarlyRuns.Early(1, 1, new byte[0], new byte[32], false);
    DuckSessions.Session s = sessions.borrow();
    PreparedStatement endless =
        s.prepared("SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3");
    boolean[] cancelSent = {false};
    CompletableFuture<Throwable> run = CompletableFuture.supplyAsync(() -> {
      try {
        early.executing(endless);
        sessions.running(endless); // only so that the test sees it has begun
        try (ResultSet r = endless.executeQuery()) {
          return null;
        } finally {
          sessions.ended(endless);
        }
      } catch (SQLException | RuntimeException e) {
        return e;
      } finally {
        cancelSent[0] = early.executed();
      }
    });
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (sessions.runningCount() == 0) {
      assertTrue(System.nanoTime() - end < 0, "the statement never started");
      Thread.sleep(10);
    }
    while (!run.isDone()) {
      // A cancel sent before DuckDB began the statement reaches nothing: abandon again, as a
      // retry's chain would.
      assertTrue(System.nanoTime() - end < 0, "the statement was never stopped");
      early.abandon();
      Thread.sleep(50);
    }
    Throwable stopped = run.get(1, TimeUnit.SECONDS);
    assertTrue(stopped instanceof SQLException, "cancelled inside DuckDB: " + stopped);
    assertTrue(early.abandoned());
    assertTrue(cancelSent[0], "its session is discarded after a cancel");
    sessions.discard(s);
  }

  @Test
  void aStatementInsideDuckDbIsCancelledAndNoneStartsAfter() throws Exception {
    // Hours of work for DuckDB: only a cancel from another thread ends it (an interrupt does not).
    DuckSessions.Session s = sessions.borrow();
    PreparedStatement endless =
        s.prepared("SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3");
    CompletableFuture<Throwable> run = CompletableFuture.supplyAsync(() -> {
      try {
        sessions.running(endless);
        try (ResultSet r = endless.executeQuery()) {
          return null;
        } finally {
          sessions.ended(endless);
        }
      } catch (SQLException e) {
        return e;
      }
    });
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (sessions.runningCount() == 0) {
      assertTrue(System.nanoTime() - end < 0, "the statement never started");
      Thread.sleep(10);
    }
    assertEquals(1, sessions.cancelRunning());
    // A cancel that came before DuckDB began executing reached nothing: ask again, as close does.
    while (!run.isDone()) {
      assertTrue(System.nanoTime() - end < 0, "the statement was never stopped");
      sessions.cancelRunning();
      Thread.sleep(50);
    }
    Throwable stopped = run.get(1, TimeUnit.SECONDS);
    assertTrue(stopped instanceof SQLException, "the run ends in an SQLException: " + stopped);
    assertEquals(0, sessions.runningCount());
    assertTrue(sessions.cancelling());

    PreparedStatement next = s.prepared("SELECT CAST(? AS BIGINT) + 1");
    SQLException refused = assertThrows(SQLException.class, () -> sessions.running(next));
    assertTrue(refused.getMessage().contains("engine is closing"), refused.getMessage());
    sessions.discard(s);
  }
}
