package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.PRINCIPAL;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.access;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.assertNoExecutionBuffers;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.bundle;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.chain;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.column;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.fullRights;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.roomyBudgets;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.postgres.PostgresCluster;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import io.transit.flight.nativequery.postgres.PostgresSettings;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.nio.file.Path;
import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Counts the network round trips of each kind of journal transaction on the PostgreSQL journal
 * (docs/deployment.md, "Round trips"), from the protocol messages the driver reports sending.
 *
 * <p>The driver waits for the server after each Sync message (extended protocol) and after each
 * simple Query message; the {@code BEGIN} it sends lazily as a simple Query travels in the same
 * flush as the statement after it, so it is no wait of its own. The pool's liveness check (an
 * empty simple Query before a transaction) is not part of the transaction and is not counted.
 * The test's connections send each statement's text with it ({@code prepareThreshold=0}), so a
 * transaction is told by what it writes; a server-prepared statement travels in the same flush
 * without its text, in as many round trips.
 */
class JournalRoundTripTest {
  private static final String SQL = "project";
  private static final EngineTestSupport.TablePlanner PLANNER =
      new EngineTestSupport.TablePlanner().put(SQL, new QueryPlan(
          List.of(column("id", LogicalType.INT64, false), column("a", LogicalType.INT64, false)),
          null, 1000L, false));
  private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);

  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;
  @RegisterExtension
  static final PostgresCluster.PerClass CLUSTER = new PostgresCluster.PerClass();

  @BeforeAll
  static void start() throws Exception {
    demo = DemoData.generate(data);
  }

  @Test
  void eachDurableStepTakesItsCountedRoundTrips() throws Exception {
    PostgresSettings s = CLUSTER.get().settings(CLUSTER.get().createDatabase());
    PostgresSettings counted = new PostgresSettings(s.jdbcUrl() + "?prepareThreshold=0", s.user(),
        s.password(), s.poolSize(), s.connectionTimeout(), s.lockTimeout(), s.statementTimeout(),
        s.idleInTransactionTimeout());
    Transactions log = new Transactions();
    Logger driver = Logger.getLogger("org.postgresql");
    Level before = driver.getLevel();
    EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults()
            // No sweep and no takeover scan while counting: only the steps under test run.
            .withRetention(java.time.Duration.ofDays(1), 1L << 40, java.time.Duration.ofHours(1))
            .withLease(java.time.Duration.ofMinutes(10), java.time.Duration.ofMinutes(10)),
        PostgresJournal.open(counted), demo, List.of(fullRights()), PLANNER);
    try {
      driver.setLevel(Level.FINEST);
      driver.addHandler(log);
      // Twice: the first chain warms the pool and the driver; the second one is counted.
      for (int round = 0; round < 2; round++) {
        log.clear();
        List<SignedCommand> commands = chain(engine.nextSequence(PRINCIPAL),
            bundle(demo.get(0).declaration(), SQL, roomyBudgets()), 200);
        CommandOutcome last = null;
        for (SignedCommand c : commands) {
          last = engine.send(c);
          assertEquals(CommandOutcome.Kind.ACCEPTED, last.getKind(), last.getMessage());
        }
        QueryStatus done =
            engine.awaitQuery(access(), last.getCorrelation(), System.nanoTime() + WAIT_NANOS);
        assertNotNull(done, "the query ended within the wait");
        assertEquals(QueryStatus.State.SUCCEEDED, done.getState(), done.getMessage());
      }
      assertNoExecutionBuffers(engine);
    } finally {
      driver.removeHandler(log);
      driver.setLevel(before);
      engine.close();
    }
    Map<String, List<Integer>> trips = log.byKind();
    System.out.println("journal round trips per transaction: " + trips);
    // The chain of the counted round: one begin, its parts, one seal, one submit, and one
    // terminal commit unless the submit's own transaction recorded the result.
    assertEquals(1, trips.get("begin").size(), trips.toString());
    assertTrue(trips.get("part").size() >= 2, trips.toString());
    assertEquals(1, trips.get("seal").size(), trips.toString());
    assertEquals(1, trips.get("submit").size(), trips.toString());
    assertEquals(List.of(4), trips.get("begin"), "begin");
    for (int p : trips.get("part")) {
      assertEquals(4, p, "part");
    }
    assertEquals(List.of(5), trips.get("seal"), "seal");
    List<Integer> terminal = trips.getOrDefault("terminal", List.of());
    if (terminal.isEmpty()) {
      // The seal's early run finished first (EarlyRuns): its result commits with the submit —
      // the submit's six, then finish and the inline segment's insert (the query row the same
      // transaction inserted is not read back).
      assertEquals(List.of(8), trips.get("submit"), "submit with its result");
    } else {
      // Handed to the run instead: finish, the inline segments' inserts, COMMIT.
      assertEquals(List.of(6), trips.get("submit"), "submit");
      assertEquals(List.of(3), terminal, "terminal");
    }
  }

  /**
   * Each thread's transactions as the driver sends them: from the {@code BEGIN} on, the statement
   * texts and the waits (Sync, or a simple Query other than {@code BEGIN}) until the next.
   */
  private static final class Transactions extends Handler {
    private record Tx(List<String> texts, int[] waits) {}

    private final Map<Thread, List<Tx>> byThread = new HashMap<>();

    synchronized void clear() {
      byThread.clear();
    }

    @Override
    public synchronized void publish(LogRecord r) {
      String m = r.getMessage();
      if (m == null || !m.startsWith(" FE=> ")) {
        return;
      }
      String text = r.getParameters() == null ? m : MessageFormat.format(m, r.getParameters());
      List<Tx> mine = byThread.computeIfAbsent(Thread.currentThread(), t -> new ArrayList<>());
      if (text.startsWith(" FE=> SimpleQuery(query=\"BEGIN\"")) {
        mine.add(new Tx(new ArrayList<>(), new int[1]));
        return;
      }
      if (mine.isEmpty()) {
        return;
      }
      Tx tx = mine.get(mine.size() - 1);
      if (text.startsWith(" FE=> Sync")) {
        tx.waits()[0]++;
      } else if (text.startsWith(" FE=> SimpleQuery(query=\"\")")) {
        return; // the pool's liveness check before a borrow
      } else if (text.startsWith(" FE=> SimpleQuery")) {
        tx.waits()[0]++;
        tx.texts().add(text);
      } else if (text.startsWith(" FE=> Parse")) {
        tx.texts().add(text);
      }
    }

    /** Round trips per transaction, by the kind its statements tell. */
    synchronized Map<String, List<Integer>> byKind() {
      Map<String, List<Integer>> out = new HashMap<>();
      for (String k : List.of("begin", "part", "seal", "submit", "terminal")) {
        out.put(k, new ArrayList<>());
      }
      for (List<Tx> txs : byThread.values()) {
        for (Tx tx : txs) {
          String all = String.join("\n", tx.texts());
          String kind = all.contains("INSERT INTO queries") ? "submit"
              : all.contains("INSERT INTO uploads") ? "begin"
              : all.contains("INSERT INTO upload_parts") ? "part"
              : all.contains("UPDATE uploads SET state") ? "seal"
              : all.contains("UPDATE queries SET state") ? "terminal"
              : null;
          if (kind != null) {
            out.get(kind).add(tx.waits()[0]);
          }
        }
      }
      return out;
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }
}
