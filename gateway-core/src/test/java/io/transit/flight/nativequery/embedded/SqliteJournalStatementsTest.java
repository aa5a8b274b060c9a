package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQLite journal's statement cache: a failure of SQLite itself drops it (the driver may leave
 * a failed statement finalized), a failure of the work alone keeps it, and either way the next
 * transaction runs. Also what runs beside the committing connection: the WAL checkpoints and the
 * retention sweep's sum.
 */
class SqliteJournalStatementsTest {
  @TempDir Path dir;

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A journal reopened after its writer was killed may hold deferred frames no fsync covered:
   * the first flush makes them durable whatever this process committed (until 2026-12-06 it
   * did nothing until this process had deferred a commit of its own).
   */
  @Test
  void theFirstFlushAfterOpenCoversWhatTheLastWriterDeferred() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    try (SqliteJournal first = SqliteJournal.open(file)) {
      first.transaction(JournalStore.Durability.DEFERRED, () -> {
        first.setNextSequence(1, 5);
        return null;
      });
    }
    try (SqliteJournal reopened = SqliteJournal.open(file)) {
      long before = reopened.durableCommits();
      reopened.flush();
      assertEquals(before + 1, reopened.durableCommits(), "the first flush syncs");
      reopened.flush();
      assertEquals(before + 1, reopened.durableCommits(), "the next has nothing to cover");
    }
  }

  @Test
  void onlyAnSqlFailureDropsTheCachedStatements() throws Exception {
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve("journal.sqlite"))) {
      journal.transaction(() -> {
        journal.recordCommand(1, 1, 1, bytes("sha"), bytes("outcome"));
        return journal.command(1, 1);
      });
      int cached = journal.cachedStatements();
      assertTrue(cached > 0);

      assertThrows(IllegalStateException.class, () -> journal.transaction(() -> {
        journal.command(1, 1);
        throw new IllegalStateException("the decision failed");
      }));
      assertEquals(cached, journal.cachedStatements(), "the work's own failure keeps the cache");

      // The same (principal, sequence) again: SQLite refuses it (primary key).
      assertThrows(SQLException.class, () -> journal.transaction(() -> {
        journal.recordCommand(1, 1, 1, bytes("other"), bytes("outcome"));
        return null;
      }));
      assertEquals(0, journal.cachedStatements(), "an SQLite failure drops the cache");
      assertArrayEquals(bytes("outcome"),
          journal.transaction(() -> journal.command(1, 1)).orElseThrow().outcome());
    }
  }

  @Test
  void theRetentionReadsAsideWhileACommandsTransactionIsOpen() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve("aside.sqlite"))) {
      CountDownLatch inside = new CountDownLatch(1);
      CountDownLatch done = new CountDownLatch(1);
      Future<Object> holder = pool.submit(() -> journal.transaction(() -> {
        journal.recordCommand(1, 1, 1, bytes("sha"), bytes("outcome"));
        inside.countDown();
        try {
          assertTrue(done.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        return null;
      }));
      assertTrue(inside.await(10, TimeUnit.SECONDS));
      // The journal's monitor is held by a transaction that wrote: the sweep's reads do not wait.
      assertEquals(0L, pool.submit(journal::retainedBytesAside).get(5, TimeUnit.SECONDS));
      assertTrue(pool.submit(() -> journal.liveManifestsAside(Long.MIN_VALUE, 10))
          .get(5, TimeUnit.SECONDS).isEmpty());
      done.countDown();
      holder.get(10, TimeUnit.SECONDS);
      assertEquals(0L, journal.retainedBytesAside(), "and again, on the same aside connection");
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  @Test
  void theWalIsCheckpointedOnItsOwnThreadEveryFewCommits() throws Exception {
    Path file = dir.resolve("checkpointed.sqlite");
    int commits = WalCheckpointer.COMMITS_PER_CHECKPOINT * 3;
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      for (int i = 1; i <= commits; i++) {
        long seq = i;
        journal.transaction(JournalStore.Durability.DEFERRED, () -> {
          journal.recordCommand(1, seq, seq, bytes("sha" + seq), bytes("outcome"));
          return null;
        });
      }
      // Requests that find one still queued join it, so a slow thread may run fewer than three.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (journal.checkpoints() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      long ran = journal.checkpoints();
      assertTrue(ran >= 1 && ran <= 3, ran + " checkpoints for " + commits + " commits");
      assertEquals(WalCheckpointer.BACKSTOP_PAGES, journal.autoCheckpointPages(),
          "the committing connection checkpoints only as a backstop");
      try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + file);
          java.sql.Statement s = c.createStatement();
          java.sql.ResultSet r = s.executeQuery("SELECT COUNT(*) FROM commands")) {
        assertTrue(r.next());
        assertEquals(commits, r.getLong(1));
      }
    }
    assertFalse(java.nio.file.Files.exists(dir.resolve("checkpointed.sqlite-wal")),
        "the last close checkpoints and removes the WAL");
  }
}
