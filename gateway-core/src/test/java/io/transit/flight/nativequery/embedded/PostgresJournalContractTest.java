package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.transit.flight.nativequery.postgres.PostgresCluster;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@link JournalStore} contract against the shared PostgreSQL journal, on a private cluster
 * this class starts (skipped, loudly, only when the PostgreSQL binaries are missing); each test
 * gets a fresh database. Also what only a shared journal can show: two replicas' history sweeps
 * forgetting the same statements and unsubmitted uploads at the same moment.
 */
class PostgresJournalContractTest extends JournalStoreContract {
  private static final int STATEMENTS = 600;
  private static final int PRINCIPALS = 3;
  /** begin, one part, seal, submit */
  private static final int CHAIN = 4;
  @RegisterExtension
  static final PostgresCluster.PerClass CLUSTER = new PostgresCluster.PerClass();
  private String database;
  @TempDir Path dir;

  @Override
  protected JournalStore openFresh() throws Exception {
    database = CLUSTER.get().createDatabase();
    return PostgresJournal.open(CLUSTER.get().settings(database));
  }

  @Override
  protected JournalStore reopen() throws Exception {
    return PostgresJournal.open(CLUSTER.get().settings(database));
  }

  @Override
  protected long rows(String table) throws Exception {
    try (Connection c = CLUSTER.get().connect(database);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
      r.next();
      return r.getLong(1);
    }
  }

  /**
   * Statement {@code i}'s rows as the engine leaves them once its result is released; every third
   * statement's chain instead stops after its part, its upload never submitted, and its next
   * command is refused naming a namespace no upload holds.
   */
  private static void finishedStatement(JournalStore j, int i) throws SQLException {
    long principal = 1 + i % PRINCIPALS;
    long ns = 1 + (long) (i / PRINCIPALS) * CHAIN;
    j.beginUpload(principal, ns, 3, 1, bytes("digest"), 0);
    j.addPart(principal, ns, 0, bytes("abc"));
    if (i % 3 == 2) {
      for (int k = 0; k < 2; k++) {
        j.recordCommand(principal, ns + k, ns, bytes("sha-" + (ns + k)), bytes("accepted"));
      }
      j.recordRefusal(principal, ns + 2, 0, bytes("sha-" + (ns + 2)), bytes("refused"), 0);
      j.setNextSequence(principal, ns + CHAIN);
      return;
    }
    j.setUploadState(principal, ns, JournalStore.UploadState.SUBMITTED);
    long correlation = j.allocateCorrelation();
    for (int k = 0; k < CHAIN; k++) {
      CommandOutcome.Builder o = CommandOutcome.newBuilder().setPrincipal(principal)
          .setSequence(ns + k).setKind(CommandOutcome.Kind.ACCEPTED);
      if (k == CHAIN - 1) {
        o.setCorrelation(correlation);
      }
      j.recordCommand(principal, ns + k, ns, bytes("sha-" + (ns + k)),
          o.build().toByteArray());
    }
    j.setNextSequence(principal, ns + CHAIN);
    j.insertAccepted(correlation, principal, ns, bytes("digest"));
    assertTrue(j.finish(QueryStatus.newBuilder().setCorrelation(correlation)
        .setPrincipal(principal).setNamespace(ns).setState(QueryStatus.State.SUCCEEDED)
        .setManifestSha256(ByteString.copyFrom(new byte[32])).build(), bytes("digest"),
        bytes("m"), 10, 1_000 + i, 0));
    assertTrue(j.release(correlation));
  }

  @Test
  void twoReplicasForgettingAtOnceNeverDeadlockAndForgetEachStatementWhole() throws Exception {
    // 400 finished statements, 200 uploads never submitted and 200 other refusals, over three
    // principals.
    for (int from = 0; from < STATEMENTS; from += 50) {
      int first = from;
      journal.transaction(() -> {
        for (int i = first; i < first + 50; i++) {
          finishedStatement(journal, i);
        }
        return null;
      });
    }
    RetentionPolicy bounded = new RetentionPolicy(Duration.ofSeconds(1), 1L << 40,
        Duration.ofHours(1), Duration.ofSeconds(1));
    List<JournalStore> journals = new ArrayList<>();
    List<Retention> replicas = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int r = 0; r < 2; r++) {
        JournalStore j = PostgresJournal.open(CLUSTER.get().settings(database));
        journals.add(j);
        replicas.add(new Retention(j, new LocalSegmentStore(dir.resolve("segments-" + r)),
            bounded, () -> 10_000_000L, Duration.ofSeconds(5)));
      }
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> swept = new ArrayList<>();
      for (Retention replica : replicas) {
        swept.add(pool.submit(() -> {
          assertTrue(start.await(30, TimeUnit.SECONDS), "the sweeps were never started");
          return replica.sweep().forgotten(); // a deadlock would throw here (SQLSTATE 40P01)
        }));
      }
      start.countDown();
      int forgotten = 0;
      for (Future<Integer> f : swept) {
        forgotten += f.get(120, TimeUnit.SECONDS);
      }
      assertTrue(forgotten >= STATEMENTS + STATEMENTS / 3, "forgotten " + forgotten);

      JournalStore j = journals.get(0);
      j.transaction(() -> {
        assertTrue(j.finishedBefore(Long.MAX_VALUE, 10).isEmpty());
        assertTrue(j.abandonedBefore(Long.MAX_VALUE, 10).isEmpty());
        for (long p = 1; p <= PRINCIPALS; p++) {
          long next = 1 + (long) (STATEMENTS / PRINCIPALS) * CHAIN;
          assertEquals(next, j.nextSequence(p, 1), "principal " + p);
          for (long s = 1; s < next; s++) {
            assertTrue(j.command(p, s).isEmpty(), "principal " + p + " sequence " + s);
          }
          for (long ns = 1; ns < next; ns += CHAIN) {
            assertTrue(j.upload(p, ns).isEmpty());
            assertEquals(0, j.assembled(p, ns).length);
          }
        }
        return null;
      });
      // Nothing is left for a later sweep either.
      assertEquals(0, replicas.get(1).sweep().forgotten());
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
      for (Retention r : replicas) {
        r.close();
      }
      for (JournalStore j : journals) {
        j.close();
      }
    }
  }
}
