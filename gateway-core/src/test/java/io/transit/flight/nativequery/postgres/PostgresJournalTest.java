package io.transit.flight.nativequery.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.embedded.JournalStore;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only the shared journal has: the principal's row lock across two journals (two
 * replicas), bounded lock waits, a lost connection, concurrent migrations, a refused login —
 * each failure before the commit is {@link JournalStore.NotCommitted} with the server's
 * SQLState, and the journal keeps working afterwards.
 */
class PostgresJournalTest {
  @RegisterExtension
  static final PostgresCluster.PerClass CLUSTER = new PostgresCluster.PerClass();

  private static PostgresSettings withLockTimeout(PostgresSettings s, Duration lock) {
    return new PostgresSettings(s.jdbcUrl(), s.user(), s.password(), s.poolSize(),
        s.connectionTimeout(), lock, s.statementTimeout(), s.idleInTransactionTimeout());
  }

  @Test
  void aPrincipalIsHeldByOneReplicaAtATimeAndOthersAreNot() throws Exception {
    String db = CLUSTER.get().createDatabase();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (PostgresJournal a = PostgresJournal.open(CLUSTER.get().settings(db));
        PostgresJournal b = PostgresJournal.open(CLUSTER.get().settings(db))) {
      CountDownLatch locked = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      Future<?> holder = threads.submit(() -> a.transaction(() -> {
        assertEquals(1, a.nextSequence(5, 1));
        locked.countDown();
        assertTrue(awaited(release), "released within 30 s");
        a.setNextSequence(5, 2);
        return null;
      }));
      assertTrue(locked.await(30, TimeUnit.SECONDS));
      // Another principal is not held up by principal 5's lock.
      assertEquals(1, b.transaction(() -> b.nextSequence(6, 1)));
      Future<Long> waiter = threads.submit(() -> b.transaction(() -> b.nextSequence(5, 1)));
      Thread.sleep(300); // long enough for b to reach the lock; the result must still wait
      assertFalse(waiter.isDone(), "replica b waits for replica a's transaction");
      release.countDown();
      holder.get(30, TimeUnit.SECONDS);
      assertEquals(2, waiter.get(30, TimeUnit.SECONDS), "b sees a's committed sequence");
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  private static boolean awaited(CountDownLatch latch) {
    try {
      return latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * A replica stalled inside a transaction that holds an expired query's row (a pause, a lost
   * network) must not hold up another replica's takeover scan: the scan skips that row and
   * claims the others at once. Until 2026-12-07 the scan waited the whole lock timeout on it, and
   * its claims rolled back with it.
   */
  @Test
  void aTakeoverScanSkipsARowAnotherTransactionHoldsAndClaimsTheRest() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = PostgresJournal.open(
            withLockTimeout(CLUSTER.get().settings(db), Duration.ofSeconds(20)));
        Connection stalled = CLUSTER.get().connect(db)) {
      long[] q = j.transaction(() -> {
        long[] out = new long[2];
        for (int i = 0; i < 2; i++) {
          out[i] = j.allocateCorrelation();
          j.insertAccepted(out[i], 31, i + 1, new byte[] {(byte) i});
        }
        return out;
      });
      stalled.setAutoCommit(false);
      try (Statement s = stalled.createStatement()) {
        s.execute("SELECT * FROM queries WHERE correlation = " + q[0] + " FOR UPDATE");
      }
      List<Long> claimed = assertTimeoutPreemptively(Duration.ofSeconds(10), () ->
          j.transaction(() -> {
            List<Long> out = new ArrayList<>();
            long now = j.leaseClockMillis();
            for (long c : j.expiredLeases(now, 10)) {
              j.claim(c, 7, "b/1", now, now + 3_000).ifPresent(a -> out.add(c));
            }
            return out;
          }));
      assertEquals(List.of(q[1]), claimed, "the held row is skipped, the other claimed");
      stalled.rollback();
      assertEquals(List.of(q[0]), j.transaction(() -> j.expiredLeases(j.leaseClockMillis(), 10)),
          "once released, the skipped row is claimable");
    }
  }

  /** Every replica's lease times are on the server's clock: one reading, the same for all. */
  @Test
  void theLeaseClockIsTheServersAndAdvances() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal a = PostgresJournal.open(CLUSTER.get().settings(db));
        Connection c = CLUSTER.get().connect(db)) {
      long server;
      try (Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT (extract(epoch FROM now()) * 1000)::bigint")) {
        r.next();
        server = r.getLong(1);
      }
      long first = a.transaction(a::leaseClockMillis);
      Thread.sleep(20);
      // clock_timestamp(), not now(): two readings in one transaction differ.
      long[] two = a.transaction(() -> {
        long x = a.leaseClockMillis();
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        while (System.nanoTime() < until) {
          java.util.concurrent.locks.LockSupport.parkNanos(until - System.nanoTime());
        }
        return new long[] {x, a.leaseClockMillis()};
      });
      assertTrue(first >= server, first + " >= " + server);
      assertTrue(two[0] > first && two[1] >= two[0] + 20, java.util.Arrays.toString(two));
    }
  }

  @Test
  void aLockHeldPastTheTimeoutFailsDefinitelyWithNothingCommitted() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = PostgresJournal.open(
            withLockTimeout(CLUSTER.get().settings(db), Duration.ofMillis(200)));
        Connection other = CLUSTER.get().connect(db)) {
      j.transaction(() -> j.nextSequence(9, 1));
      other.setAutoCommit(false);
      try (Statement s = other.createStatement()) {
        s.execute("SELECT * FROM principals WHERE principal = 9 FOR UPDATE");
      }
      JournalStore.NotCommitted e = assertThrows(JournalStore.NotCommitted.class,
          () -> j.transaction(() -> {
            j.nextSequence(9, 1);
            j.recordCommand(9, 1, 1, new byte[] {1}, new byte[] {2});
            return null;
          }));
      assertEquals("55P03", e.getSQLState(), "lock_not_available");
      assertEquals(1, j.failures(), "the operations metrics' outage signal");
      other.rollback();
      assertTrue(j.transaction(() -> j.command(9, 1)).isEmpty());
      assertEquals(1, j.transaction(() -> j.nextSequence(9, 1)), "the journal works on");
    }
  }

  @Test
  void aLostConnectionFailsTheTransactionDefinitelyAndTheNextOneWorks() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = PostgresJournal.open(CLUSTER.get().settings(db))) {
      j.transaction(() -> j.nextSequence(1, 1));
      JournalStore.NotCommitted e = assertThrows(JournalStore.NotCommitted.class,
          () -> j.transaction(() -> {
            j.nextSequence(1, 1);
            terminateJournalSessions(db);
            j.recordCommand(1, 1, 1, new byte[] {1}, new byte[] {2});
            return null;
          }));
      assertTrue(e.getSQLState() != null && (e.getSQLState().startsWith("57P")
              || e.getSQLState().startsWith("08")),
          "admin shutdown or connection failure: " + e.getSQLState());
      // HikariCP evicted the broken connections; the next transactions get fresh ones.
      for (int i = 0; i < 8; i++) {
        assertEquals(1, j.transaction(() -> j.nextSequence(1, 1)));
      }
      assertTrue(j.transaction(() -> j.command(1, 1)).isEmpty());
    }
  }

  @Test
  void theRightsEpochReadAfterALostConnectionIsRetriedOnAFreshOne() throws Exception {
    String db = CLUSTER.get().createDatabase();
    // One pooled connection, used just before the server ends its session: within HikariCP's
    // 500 ms without a validation check, so the broken connection is what the read gets.
    try (PostgresJournal j = onePooledConnection(db)) {
      assertEquals(0, j.readRightsEpoch());
      terminateJournalSessions(db);
      // Until 2026-12-06 this read failed (each call's authorization with it) on the dead one.
      assertEquals(0, j.readRightsEpoch());
    }
  }

  @Test
  void aSyncDoesNotWaitForAnotherSessionsSyncInFlight() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = onePooledConnection(db)) {
      j.sync();
      long journalRow = syncRow(journalSessionPid(db));
      // Another replica's sync, its commit (and WAL flush) not yet returned: it holds its row.
      // A session folded onto the journal's own row would make it wait, so take another one.
      List<Connection> others = new ArrayList<>();
      try {
        Connection other;
        do {
          other = CLUSTER.get().connect(db);
          others.add(other);
        } while (syncRow(pid(other)) == journalRow);
        other.setAutoCommit(false);
        try (Statement s = other.createStatement()) {
          assertEquals(1, s.executeUpdate(PostgresJournal.SYNC));
        }
        // Until 2026-12-06 every sync wrote one shared row: this one waited for the other's
        // commit and failed at lock_timeout.
        j.sync();
        other.rollback();
      } finally {
        for (Connection c : others) {
          c.close();
        }
      }
    }
  }

  private static long syncRow(long pid) {
    return pid % PostgresJournal.SYNC_ROWS;
  }

  private static long pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  /** The process id of the journal's one pooled session on {@code db}. */
  private static long journalSessionPid(String db) throws SQLException {
    try (Connection c = CLUSTER.get().connect(db);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pid FROM pg_stat_activity WHERE datname = '" + db
            + "' AND application_name = 'transit-flight'")) {
      assertTrue(r.next(), "the journal's session was found");
      long pid = r.getLong(1);
      assertFalse(r.next(), "the journal has one session");
      return pid;
    }
  }

  /** A journal on {@code db} whose pool holds a single connection. */
  private static PostgresJournal onePooledConnection(String db) throws Exception {
    PostgresSettings s = CLUSTER.get().settings(db);
    return PostgresJournal.open(new PostgresSettings(s.jdbcUrl(), s.user(), s.password(), 1,
        s.connectionTimeout(), s.lockTimeout(), s.statementTimeout(),
        s.idleInTransactionTimeout()));
  }

  private static void terminateJournalSessions(String db) throws SQLException {
    try (Connection c = CLUSTER.get().connect(db);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT count(pg_terminate_backend(pid)) FROM"
            + " pg_stat_activity WHERE datname = '" + db + "'"
            + " AND application_name = 'transit-flight'")) {
      assertTrue(r.next());
      assertTrue(r.getLong(1) >= 1, "the journal's sessions were found");
    }
  }

  @Test
  void replicasStartingTogetherMigrateOnce() throws Exception {
    String db = CLUSTER.get().createDatabase();
    ExecutorService threads = Executors.newFixedThreadPool(3);
    List<PostgresJournal> opened = new ArrayList<>();
    try {
      List<Future<PostgresJournal>> opens = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        opens.add(threads.submit(() -> PostgresJournal.open(CLUSTER.get().settings(db))));
      }
      for (Future<PostgresJournal> f : opens) {
        opened.add(f.get(60, TimeUnit.SECONDS));
      }
      try (Connection c = CLUSTER.get().connect(db);
          Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT count(*) FROM journal_schema_history"
              + " WHERE success AND version = '1'")) {
        assertTrue(r.next());
        assertEquals(1, r.getLong(1));
      }
      long c0 = opened.get(0).transaction(opened.get(0)::allocateCorrelation);
      long c1 = opened.get(1).transaction(opened.get(1)::allocateCorrelation);
      assertTrue(c0 < c1, "one correlation sequence for every replica");
    } finally {
      for (PostgresJournal j : opened) {
        j.close();
      }
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  @Test
  void aReplicaOfAnOlderVersionOpensAJournalANewerOneMigrated() throws Exception {
    // A rolling upgrade runs old and new replicas side by side (docs/deployment.md, "Upgrade"):
    // the new one's additive migration must not stop the old one from opening the journal.
    String db = CLUSTER.get().createDatabase();
    PostgresJournal.open(CLUSTER.get().settings(db)).close();
    CLUSTER.get().execute(db, "CREATE TABLE upgrade_probe (id bigint)");
    CLUSTER.get().execute(db, "INSERT INTO journal_schema_history (installed_rank, version, description,"
        + " type, script, checksum, installed_by, execution_time, success)"
        + " SELECT max(installed_rank) + 1, '999', 'a newer release', 'SQL', 'V999__newer.sql',"
        + " 0, current_user, 1, true FROM journal_schema_history");
    try (PostgresJournal older = PostgresJournal.open(CLUSTER.get().settings(db))) {
      long c = older.transaction(older::allocateCorrelation);
      assertTrue(c > 0, "the older replica admits on the newer schema");
    }
  }

  /**
   * The compatibility floor (JournalStore "Formats"): V9 records format 1; a floor above this
   * build's format (a newer release's journal) is refused at open with one line naming the
   * database without credentials, and is never lowered; at the floor, the journal opens.
   */
  @Test
  void aJournalANewerBuildRaisedTheFloorOfIsRefusedAtOpen() throws Exception {
    String db = CLUSTER.get().createDatabase();
    PostgresJournal.open(CLUSTER.get().settings(db)).close();
    assertEquals(JournalStore.FORMAT, readerFormat(db));

    CLUSTER.get().execute(db, "UPDATE counters SET value = 2 WHERE name = 'reader_format'");
    JournalStore.TooNew refused = assertThrows(JournalStore.TooNew.class,
        () -> PostgresJournal.open(CLUSTER.get().settings(db)));
    assertEquals("the journal PostgreSQL database " + CLUSTER.get().url(db)
        + " requires journal format 2 or newer; this build implements format 1: run a newer"
        + " build", refused.getMessage());
    assertFalse(refused.getMessage().contains(CLUSTER.get().password()));
    assertEquals(2, readerFormat(db), "never lowered");

    CLUSTER.get().execute(db, "UPDATE counters SET value = 1 WHERE name = 'reader_format'");
    try (PostgresJournal j = PostgresJournal.open(CLUSTER.get().settings(db))) {
      assertTrue(j.transaction(j::allocateCorrelation) > 0);
    }
  }

  private static long readerFormat(String db) throws SQLException {
    try (Connection c = CLUSTER.get().connect(db);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT value FROM counters WHERE name = 'reader_format'")) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  @Test
  void aDurableCommitThatWroteCoversTheDeferredOnesBeforeIt() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = PostgresJournal.open(CLUSTER.get().settings(db))) {
      j.transaction(JournalStore.Durability.DEFERRED, () -> {
        j.setNextSequence(1, 5);
        return null;
      });
      j.flush();
      assertEquals(1, flushes(db), "a deferred commit alone is flushed by a row of its own");
      j.transaction(JournalStore.Durability.DEFERRED, () -> {
        j.setNextSequence(1, 6);
        return null;
      });
      j.transaction(JournalStore.Durability.DURABLE, () -> {
        j.setNextSequence(2, 1);
        return null;
      });
      j.flush();
      assertEquals(1, flushes(db), "the durable commit after it flushed the WAL already");
      j.transaction(JournalStore.Durability.DEFERRED, () -> {
        j.setNextSequence(1, 7);
        return null;
      });
      j.transaction(JournalStore.Durability.DURABLE, () -> j.nextSequence(1, 1));
      j.transaction(JournalStore.Durability.DURABLE, j::rightsEpoch);
      j.flush();
      assertEquals(2, flushes(db), "a durable commit that wrote no row is not counted on");
    }
  }

  private static long flushes(String db) throws SQLException {
    try (Connection c = CLUSTER.get().connect(db);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT sum(count) FROM flushes")) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  @Test
  void theRightsEpochIsReadInAutocommitAndTheConnectionGoesBackTransactional() throws Exception {
    // One pooled connection: the read and the transaction after it share it.
    try (PostgresJournal j = onePooledConnection(CLUSTER.get().createDatabase())) {
      assertEquals(0, j.readRightsEpoch());
      byte[] doc = "rights".getBytes(StandardCharsets.UTF_8);
      long epoch = j.transaction(() -> j.publishRights(
          io.transit.flight.crypto.Digests.sha256(doc), doc));
      assertEquals(epoch, j.readRightsEpoch());
      assertThrows(IllegalStateException.class, () -> j.transaction(() -> {
        j.setNextSequence(9, 42);
        j.nextSequence(9, 1); // sends the held write
        throw new IllegalStateException("the work fails after writing");
      }));
      assertEquals(1, j.transaction(() -> j.nextSequence(9, 1)),
          "the failed work's write was rolled back: the connection was transactional again");
    }
  }

  @Test
  void aWrongPasswordIsRefusedAtOpenWithTheServersReason() throws Exception {
    String db = CLUSTER.get().createDatabase();
    PostgresSettings s = CLUSTER.get().settings(db);
    SQLException e = assertThrows(SQLException.class, () -> PostgresJournal.open(
        new PostgresSettings(s.jdbcUrl(), s.user(), "not-" + s.password(), 2,
            Duration.ofSeconds(2), s.lockTimeout(), s.statementTimeout(),
            s.idleInTransactionTimeout())));
    assertEquals("28P01", e.getSQLState(), e.getMessage());
    assertFalse(s.toString().contains(s.password()), "settings never print the password");
  }

  /**
   * The driver lets a URL parameter override the data source's property of the same name, so a
   * URL setting one the journal sets itself would silently undo a guarantee (options with
   * synchronous_commit=off, socketTimeout=0): such a URL is refused; other parameters still
   * reach the driver, under the journal's own settings.
   */
  @Test
  void aUrlCannotOverrideTheSettingsTheGuaranteesRestOn() throws Exception {
    String db = CLUSTER.get().createDatabase();
    PostgresSettings s = CLUSTER.get().settings(db);
    for (String query : new String[] {"options=-c%20synchronous_commit%3Doff",
        "sslmode=disable&socketTimeout=0", "connectTimeout=0", "tcpKeepAlive=false",
        "SocketTimeout=0", "options"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> new PostgresSettings(s.jdbcUrl() + "?" + query, s.user(), s.password(), 2,
              s.connectionTimeout(), s.lockTimeout(), s.statementTimeout(),
              s.idleInTransactionTimeout()), query);
      assertTrue(e.getMessage().contains("the journal sets them itself"), e.getMessage());
      assertFalse(e.getMessage().contains("synchronous_commit"), "the URL's values are not shown");
    }
    try (PostgresJournal j = PostgresJournal.open(new PostgresSettings(
        s.jdbcUrl() + "?sslmode=disable&prepareThreshold=3", s.user(), s.password(), 2,
        s.connectionTimeout(), Duration.ofMillis(4321), s.statementTimeout(),
        s.idleInTransactionTimeout()))) {
      assertEquals(List.of("on", "4321ms"), j.transaction(JournalStore.Durability.DURABLE,
          () -> List.of(show(j, "synchronous_commit"), show(j, "lock_timeout"))));
    }
  }

  /**
   * The migrations' own connections are bounded as the pool's are: a start whose schema check
   * meets a lock held by another session (an operator's, a stuck replica's) fails at the lock
   * timeout instead of waiting as long as the lock is held.
   */
  @Test
  void aStartWhoseMigrationMeetsAHeldLockFailsInsteadOfHanging() throws Exception {
    String db = CLUSTER.get().createDatabase();
    PostgresJournal.open(CLUSTER.get().settings(db)).close();
    try (Connection holder = CLUSTER.get().connect(db)) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("LOCK TABLE journal_schema_history IN ACCESS EXCLUSIVE MODE");
      }
      long started = System.nanoTime();
      SQLException e = assertTimeoutPreemptively(Duration.ofSeconds(30),
          () -> assertThrows(SQLException.class, () -> PostgresJournal.open(
              withLockTimeout(CLUSTER.get().settings(db), Duration.ofMillis(500)))));
      assertTrue(e.getMessage().contains("cannot be migrated"), e.getMessage());
      assertEquals("55P03", e.getSQLState(), e.getMessage()); // lock_not_available
      assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(20),
          "failed at the lock timeout, not at a retry budget");
      holder.rollback();
    }
    PostgresJournal.open(CLUSTER.get().settings(db)).close(); // once the lock is gone
  }

  @Test
  void sessionsRunWithTheConfiguredGuarantees() throws Exception {
    String db = CLUSTER.get().createDatabase();
    try (PostgresJournal j = PostgresJournal.open(
        withLockTimeout(CLUSTER.get().settings(db), Duration.ofMillis(1234)))) {
      // The journal's own connection, through a transaction: what the server applies.
      List<String> settings = new ArrayList<>();
      try (Connection c = CLUSTER.get().connect(db);
          Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT count(*) FROM pg_stat_activity"
              + " WHERE datname = '" + db + "' AND application_name = 'transit-flight'")) {
        assertTrue(r.next());
        assertTrue(r.getLong(1) >= 1);
      }
      j.transaction(() -> {
        settings.add(show(j, "synchronous_commit"));
        settings.add(show(j, "lock_timeout"));
        settings.add(show(j, "transaction_isolation"));
        return null;
      });
      assertEquals(List.of("on", "1234ms", "read committed"), settings);
    }
  }

  @Test
  void aHeldWriteThatFailsFailsTheTransactionBeforeItsCommit() throws Exception {
    try (PostgresJournal j = PostgresJournal.open(CLUSTER.get().settings(CLUSTER.get().createDatabase()))) {
      AtomicInteger commits = new AtomicInteger();
      j.observeCommits(nanos -> commits.incrementAndGet());
      byte[] first = "first".getBytes(StandardCharsets.UTF_8);
      j.transaction(() -> {
        j.recordCommand(9, 4, 4, first, first);
        return null;
      });
      for (JournalStore.Durability d : JournalStore.Durability.values()) {
        int before = commits.get();
        // Both writes are void, so both are held to the end: the duplicate still fails before
        // the commit, definitely, with the server's SQLState, and takes the other write with it.
        JournalStore.NotCommitted e = assertThrows(JournalStore.NotCommitted.class,
            () -> j.transaction(d, () -> {
              j.setNextSequence(9, 77);
              j.recordCommand(9, 4, 4, new byte[1], new byte[1]);
              return null;
            }), d.name());
        assertEquals("23505", e.getSQLState(), e.getMessage());
        assertEquals(before, commits.get(), "no commit was sent: " + d);
        assertEquals(5L, j.transaction(() -> j.nextSequence(9, 5)));
        assertArrayEquals(first, j.transaction(() -> j.command(9, 4)).orElseThrow().outcome());
      }
    }
  }

  @Test
  void aDeferredTransactionCommitsWithoutWaitingForItsFlushAndADurableOneWaits()
      throws Exception {
    try (PostgresJournal j = PostgresJournal.open(CLUSTER.get().settings(CLUSTER.get().createDatabase()))) {
      List<String> settings = new ArrayList<>();
      for (JournalStore.Durability d : JournalStore.Durability.values()) {
        settings.add(j.transaction(d, () -> {
          j.setNextSequence(8, 1);
          return show(j, "synchronous_commit");
        }));
        // A deferred transaction whose first statement is a write that returns its count.
        settings.add(j.transaction(d, () -> {
          j.finish(io.transit.flight.proto.QueryStatus.getDefaultInstance(), new byte[32], null,
              0, 0, 0);
          return show(j, "synchronous_commit");
        }));
      }
      assertEquals(List.of("on", "on", "off", "off"), settings); // DURABLE, then DEFERRED
    }
  }

  /** SHOW through the journal's connection: PostgresJournal exposes it to its own tests. */
  private static String show(PostgresJournal j, String name) throws SQLException {
    return j.show(name);
  }
}
