package io.transit.flight.nativequery.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.transit.flight.nativequery.embedded.JournalFormat;
import io.transit.flight.nativequery.embedded.JournalRows;
import io.transit.flight.nativequery.embedded.JournalStore;
import io.transit.flight.proto.QueryStatus;
import java.io.ByteArrayOutputStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;

/**
 * The shared {@link JournalStore} of a replicated deployment: PostgreSQL at READ COMMITTED with
 * {@code synchronous_commit=on}, reached through a HikariCP pool, its schema kept by Flyway
 * migrations ({@code V1__journal.sql}, …, applied at {@link #open} under Flyway's advisory lock,
 * so replicas starting together migrate once).
 *
 * <p>Threads: {@link #transaction} may be called from any thread (senders, query runners,
 * readers, the retention sweep), concurrently; each call borrows one pool entry (a {@link
 * Connection}) for its whole unit of work. The row-level methods run on the thread inside its
 * {@link #transaction}, on that transaction's connection (found through {@code current}). {@link
 * #close} is called once by the owner after callers stop.
 *
 * <p>Pool entries: a connection belongs to exactly one thread from {@code getConnection()} to its
 * {@code close()} (which hands it back to HikariCP); no statement, result set or connection
 * outlives the {@link #transaction} that took it, and a connection is never touched after it is
 * handed back. HikariCP alone moves entries between threads (its bag hands each to one borrower)
 * and rolls back any entry handed back with uncommitted work. A connection the server or the
 * network broke is evicted by HikariCP when its failure says so; the transaction that saw the
 * failure ends with it.
 *
 * <p>Serialization: {@link #nextSequence} locks the principal's row ({@code SELECT … FOR
 * UPDATE}, inserting the row first when absent with {@code ON CONFLICT DO NOTHING}), so two
 * transactions deciding commands of one principal — on this gateway or another replica — run one
 * after the other, and {@code UNIQUE (principal, sequence)} on commands is the backstop. Other
 * principals are not held up. Failures before the commit is sent (no connection within the
 * timeout, a lock or statement timeout, a lost connection, the backstop) roll back and throw
 * {@link JournalStore.NotCommitted}: retrying is safe. A failure of the commit itself may have
 * committed, and is thrown as it is.
 *
 * <p>Round trips: a write whose result the caller does not get (the {@code void} row methods) is
 * held in the transaction and sent with the next statement that answers something (a read, or a
 * write returning its count), as one multi-statement text the driver sends in one flush with one
 * Sync; what is still held at the end goes in one round trip before {@code COMMIT}, which stays
 * one of its own: a failure before it is known to have committed nothing (so a lost connection
 * is retried), a failure of it may have committed. A held write that fails fails the statement
 * it travels with, before the commit, as it would have failed alone. A deferred transaction's
 * {@code SET LOCAL} travels with its first statement, and {@code BEGIN} too (the driver sends it
 * lazily). The driver keeps each connection's parsed statements, so statements are prepared per
 * call without a parse round trip after the first uses.
 */
public final class PostgresJournal implements JournalStore {
  /** Shortest wait for the database at start, whatever {@code connection_timeout_ms} says. */
  static final Duration START_WAIT = Duration.ofSeconds(15);
  /** Shortest statement timeout of a migration's session, whatever the journal's own is. */
  static final Duration MIGRATION_STATEMENT = Duration.ofMinutes(10);
  /** SQLSTATE of PostgreSQL's "could not extend file": its storage is full. */
  private static final String DISK_FULL = "53100";

  /**
   * Deferred commits of this journal so far, and how many of them a durable commit that wrote is
   * known to cover: the server flushes its WAL in order, so a durable commit covers every commit
   * that returned before it was sent. {@link #flush} has work only while the first is ahead.
   * Any thread.
   */
  private final AtomicLong deferredCommits = new AtomicLong();
  private final AtomicLong deferredCovered = new AtomicLong();

  /**
   * The advisory lock key of the release step ({@link #lockReleases}); "transit" and 1 in its
   * bytes, so it cannot meet Flyway's migration lock, which is derived from a CRC of the schema.
   */
  private static final long RELEASE_LOCK = 0x7472616e73697401L;
  private static final String LEASE_CLOCK =
      "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

  /** Where the migrations live on the class path. */
  static final String MIGRATIONS = "classpath:io/transit/flight/nativequery/postgres/migration";
  // Rows another transaction holds (another replica's sweep, a chain being forgotten) are left
  // to a later page rather than waited for.
  private static final String FORGET_REFUSED =
      JournalRows.FORGET_REFUSED.formatted(" FOR UPDATE SKIP LOCKED");

  private final HikariDataSource pool;
  // The transaction running on this thread; set and cleared by attempt().
  private final ThreadLocal<Tx> current = new ThreadLocal<>();
  /** Told each commit's duration in nanoseconds (operations metrics); set once after open. */
  private volatile LongConsumer commitObserver = nanos -> {};
  private final AtomicLong failures =
      new AtomicLong(); // any thread: transactions failed

  private PostgresJournal(HikariDataSource pool) {
    this.pool = pool;
  }

  /**
   * One transaction's connection and the writes it holds back. Confined to the thread running
   * the transaction (reached through {@code current}); gone with it.
   */
  private static final class Tx {
    final Connection connection;
    /** Sent ahead of the transaction's first statement (its {@code SET LOCAL}), then null. */
    String prologue;
    /**
     * A row was written (a held write sent, a row counted by {@code update}, a lease claimed):
     * the commit then writes a commit record and, durable, flushes the WAL up to it.
     */
    boolean wrote;
    /** Held writes, in call order: their texts and their arguments. */
    final List<String> held = new ArrayList<>();
    final List<Object[]> heldArgs = new ArrayList<>();

    Tx(Connection connection, String prologue) {
      this.connection = connection;
      this.prologue = prologue;
    }
  }

  /** Reads a statement's result set. */
  private interface Rows<T> {
    T read(ResultSet r) throws SQLException;
  }

  /**
   * Connects, migrates the schema to the newest version and returns the journal; the caller owns
   * it and closes it.
   *
   * @throws SQLException when the database cannot be reached or migrated (the message says which)
   */
  public static PostgresJournal open(PostgresSettings settings) throws SQLException {
    HikariConfig c = new HikariConfig();
    c.setPoolName("transit-journal");
    c.setJdbcUrl(settings.jdbcUrl());
    c.setUsername(settings.user());
    c.setPassword(settings.password());
    c.setAutoCommit(false);
    c.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    c.setMaximumPoolSize(settings.poolSize());
    c.setMinimumIdle(Math.min(2, settings.poolSize()));
    c.setConnectionTimeout(Math.max(250, settings.connectionTimeout().toMillis()));
    // Fail at start, not at the first statement, when the database is unreachable; but wait at
    // least START_WAIT for it, so a replica restarted during the database's own restart comes
    // up (a short connection timeout is for callers, who retry; a failed start is not retried).
    c.setInitializationFailTimeout(
        Math.max(START_WAIT.toMillis(), settings.connectionTimeout().toMillis()));
    c.addDataSourceProperty("ApplicationName", "transit-flight");
    c.addDataSourceProperty("tcpKeepAlive", "true");
    c.addDataSourceProperty("connectTimeout",
        Long.toString(Math.max(1, settings.connectionTimeout().toSeconds())));
    // The client's own bound on a read: the server's timeouts below cannot fire for a server
    // that is gone (a crashed host, a failover to another address, a dropped flow), and without
    // it a reply is awaited until TCP keepalive gives up, about two hours. Past the longest wait
    // the server allows itself, plus a margin; a COMMIT cut by it is an unknown outcome.
    c.addDataSourceProperty("socketTimeout", Long.toString(socketTimeoutSeconds(settings)));
    // The session settings the journal's guarantees rest on, whatever the server's defaults:
    // every commit waits for its WAL flush, and no wait (lock, statement, idle transaction)
    // is unbounded. The driver lets a URL parameter override a property, so PostgresSettings
    // refuses a URL that sets any of these (JOURNAL_PARAMETERS).
    c.addDataSourceProperty("options", "-c synchronous_commit=on"
        + " -c lock_timeout=" + settings.lockTimeout().toMillis()
        + " -c statement_timeout=" + settings.statementTimeout().toMillis()
        + " -c idle_in_transaction_session_timeout="
        + settings.idleInTransactionTimeout().toMillis());
    HikariDataSource pool;
    try {
      pool = new HikariDataSource(c);
    } catch (RuntimeException e) {
      // HikariCP wraps the driver's failure; the SQLState (e.g. 28P01, 08001) is what tells why.
      throw new SQLException("the PostgreSQL journal cannot be reached: " + rootMessage(e),
          rootState(e), e);
    }
    // Flyway holds its advisory lock on one connection while it migrates on another, so it gets
    // connections of its own: a pool of one (journal.pool_size 1) would wait on itself.
    org.postgresql.ds.PGSimpleDataSource migrations = new org.postgresql.ds.PGSimpleDataSource();
    migrations.setURL(settings.jdbcUrl());
    migrations.setUser(settings.user());
    migrations.setPassword(settings.password());
    migrations.setApplicationName("transit-flight");
    migrations.setConnectTimeout((int) Math.max(1, settings.connectionTimeout().toSeconds()));
    // Bounded as the pool's sessions are, so a start against a database that holds a lock the
    // migration needs, or that stops answering, fails instead of hanging; a statement may take
    // longer than a command's (an index built over a large journal), up to MIGRATION_STATEMENT.
    Duration statement = settings.statementTimeout().compareTo(MIGRATION_STATEMENT) > 0
        ? settings.statementTimeout() : MIGRATION_STATEMENT;
    migrations.setTcpKeepAlive(true);
    migrations.setSocketTimeout((int) Math.min(Integer.MAX_VALUE,
        socketTimeoutSeconds(statement, settings.lockTimeout())));
    // The pool's other session settings too: a migration's commit waits for its WAL flush, and
    // a migration session left idle in its transaction is ended by the server.
    migrations.setOptions("-c synchronous_commit=on"
        + " -c lock_timeout=" + settings.lockTimeout().toMillis()
        + " -c statement_timeout=" + statement.toMillis()
        + " -c idle_in_transaction_session_timeout="
        + settings.idleInTransactionTimeout().toMillis());
    try {
      Flyway.configure()
          .dataSource(migrations)
          .locations(MIGRATIONS)
          .table("journal_schema_history")
          // Flyway's default, stated: a newer release's migrations (applied by a rolling
          // upgrade's first new replica) are additive, so an older replica keeps running.
          .ignoreMigrationPatterns("*:future")
          .load()
          .migrate();
    } catch (FlywayException e) {
      pool.close();
      throw new SQLException("the PostgreSQL journal's schema cannot be migrated: "
          + rootMessage(e), rootState(e), e);
    }
    // After the migrations (V9 adds the floor's row), before anything is served. A connection
    // handed back uncommitted is rolled back by HikariCP.
    try (Connection connection = pool.getConnection()) {
      JournalFormat.admit(connection,
          "PostgreSQL database " + PostgresSettings.shown(settings.jdbcUrl()));
      connection.commit();
    } catch (SQLException e) {
      pool.close();
      throw e;
    }
    return new PostgresJournal(pool);
  }

  /**
   * Runs {@code work} in one transaction on one pooled connection. When the connection turns out
   * broken before the commit (the server restarted or failed over, or ended the session), every
   * pooled connection is retired and the work runs once more on a fresh one: nothing of the
   * first attempt committed, and the work has no effect outside the journal.
   */
  @Override
  public <T> T transaction(Durability durability, Work<T> work) throws SQLException {
    if (current.get() != null) {
      throw new IllegalStateException("a journal transaction is already open on this thread");
    }
    try {
      try {
        return attempt(durability, work);
      } catch (NotCommitted e) {
        // Only a connection that broke in use is worth another try; when none could be had
        // within the timeout, a second wait would only double the caller's.
        if (!connectionLost(e) || e.getCause() instanceof SQLTransientConnectionException) {
          throw e;
        }
        // The other pooled connections most likely died with this one.
        pool.getHikariPoolMXBean().softEvictConnections();
        return attempt(durability, work);
      }
    } catch (SQLException e) {
      failures.incrementAndGet();
      throw e;
    }
  }

  @Override
  public long failures() {
    return failures.get();
  }

  private <T> T attempt(Durability durability, Work<T> work) throws SQLException {
    Connection c;
    try {
      c = pool.getConnection();
    } catch (SQLException e) {
      throw new NotCommitted("no journal connection within the timeout", e);
    }
    // A deferred transaction's commit returns before its WAL is flushed; the next durable commit
    // (of any session: the server flushes its WAL in order) or flush() covers it.
    Tx tx = new Tx(c,
        durability == Durability.DEFERRED ? "SET LOCAL synchronous_commit = off" : null);
    current.set(tx);
    try {
      T result;
      try {
        result = work.run();
        sendHeld(tx);
      } catch (NotCommitted e) {
        rollback(c);
        throw e;
      } catch (SQLException e) {
        rollback(c);
        throw new NotCommitted("the journal transaction failed before its commit", e);
      } catch (RuntimeException | Error e) {
        rollback(c);
        throw e;
      }
      long covers = deferredCommits.get(); // read before the commit is sent
      long started = System.nanoTime();
      c.commit();
      commitObserver.accept(System.nanoTime() - started);
      if (durability == Durability.DEFERRED) {
        deferredCommits.incrementAndGet();
      } else if (tx.wrote) {
        deferredCovered.accumulateAndGet(covers, Math::max);
      }
      return result;
    } finally {
      current.remove();
      c.close();
    }
  }

  /** Connection exceptions (08…) and the server ending the session (57P01–57P03). */
  private static boolean connectionLost(SQLException e) {
    String state = e.getSQLState();
    return state != null && (state.startsWith("08") || state.equals("57P01")
        || state.equals("57P02") || state.equals("57P03"));
  }

  /** Rolls back; a failure here (a broken connection) is moot: the server rolls back itself. */
  private static void rollback(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // HikariCP evicts a broken connection; nothing of the transaction committed.
    }
  }

  /** This thread's transaction. */
  private Tx tx() {
    Tx tx = current.get();
    if (tx == null) {
      throw new IllegalStateException("journal row access outside a transaction");
    }
    return tx;
  }

  /**
   * The connection of this thread's transaction for a statement prepared on it directly (rather
   * than through {@code read}, {@code update} or {@code write}): the prologue and the held writes
   * are sent first, in a round trip of their own, so that statement sees them.
   */
  private Connection connection() throws SQLException {
    Tx tx = tx();
    if (tx.held.isEmpty() && tx.prologue != null) {
      String prologue = tx.prologue;
      tx.prologue = null;
      execute(tx, prologue, new Object[0], (p, rows) -> null);
    }
    sendHeld(tx);
    return tx.connection;
  }

  /** Holds a write whose result nobody reads until the next statement or the commit. */
  private void write(String sql, Object... args) {
    Tx tx = tx();
    tx.wrote = true; // sent before the commit, or the transaction fails
    tx.held.add(sql);
    tx.heldArgs.add(args);
  }

  /** Sends the held writes, if any, in one round trip. */
  private static void sendHeld(Tx tx) throws SQLException {
    if (tx.held.isEmpty()) {
      // A prologue still unsent then means no statement was sent (nor BEGIN): nothing to apply
      // it to, and the commit sends nothing.
      return;
    }
    int last = tx.held.size() - 1;
    String sql = tx.held.remove(last);
    Object[] args = tx.heldArgs.remove(last);
    execute(tx, sql, args, (p, rows) -> null);
  }

  /** What a statement answers, read from its statement once positioned on its result. */
  private interface Answer<T> {
    T of(PreparedStatement p, boolean rows) throws SQLException;
  }

  /**
   * Runs {@code sql} with the held writes (and the prologue) ahead of it, all in one round trip,
   * and returns its answer. The held writes are dropped whatever happens: a failure aborts the
   * transaction anyway.
   */
  private static <T> T execute(Tx tx, String sql, Object[] args, Answer<T> answer)
      throws SQLException {
    StringBuilder text = new StringBuilder();
    List<Object> all = new ArrayList<>();
    int ahead = 0;
    if (tx.prologue != null) {
      text.append(tx.prologue).append(";\n");
      tx.prologue = null;
      ahead++;
    }
    for (int i = 0; i < tx.held.size(); i++) {
      text.append(tx.held.get(i)).append(";\n");
      all.addAll(Arrays.asList(tx.heldArgs.get(i)));
      ahead++;
    }
    tx.held.clear();
    tx.heldArgs.clear();
    text.append(sql);
    all.addAll(Arrays.asList(args));
    try (PreparedStatement p = tx.connection.prepareStatement(text.toString())) {
      for (int i = 0; i < all.size(); i++) {
        p.setObject(i + 1, all.get(i));
      }
      // One result per statement, in order: the held ones' counts come first.
      boolean rows = p.execute();
      for (int i = 0; i < ahead; i++) {
        rows = p.getMoreResults();
      }
      return answer.of(p, rows);
    }
  }

  /** Runs a query (held writes ahead of it) and reads its rows. */
  private <T> T read(String sql, Rows<T> rows, Object... args) throws SQLException {
    return execute(tx(), sql, args, (p, isRows) -> {
      try (ResultSet r = p.getResultSet()) {
        return rows.read(r);
      }
    });
  }

  /**
   * The principal's next sequence, its row locked until the transaction ends. An absent row is
   * inserted holding {@code first} (so there is a row to lock): a principal's row appears at its
   * first admission or first sequence read.
   */
  @Override
  public long nextSequence(long principal, long first) throws SQLException {
    Optional<Long> locked = lockedNext(principal);
    if (locked.isPresent()) {
      return locked.get();
    }
    // Another transaction inserting the same principal makes this one wait for its end, then
    // do nothing; the lock below (in the same round trip) then finds its row.
    write("INSERT INTO principals (principal, next_sequence) VALUES (?, ?)"
        + " ON CONFLICT (principal) DO NOTHING", principal, first);
    return lockedNext(principal).orElseThrow(
        () -> new SQLException("the principal's row vanished while being locked"));
  }

  private Optional<Long> lockedNext(long principal) throws SQLException {
    return read("SELECT next_sequence FROM principals WHERE principal = ? FOR UPDATE",
        r -> r.next() ? Optional.of(r.getLong(1)) : Optional.empty(), principal);
  }

  @Override
  public void setNextSequence(long principal, long next) throws SQLException {
    write("INSERT INTO principals (principal, next_sequence) VALUES (?, ?)"
        + " ON CONFLICT (principal) DO UPDATE SET next_sequence = EXCLUDED.next_sequence",
        principal, next);
  }

  @Override
  public Optional<Recorded> command(long principal, long sequence) throws SQLException {
    return read(JournalRows.SELECT_COMMAND,
        r -> r.next() ? Optional.of(JournalRows.recorded(r)) : Optional.empty(),
        principal, sequence);
  }

  @Override
  public void recordCommand(long principal, long sequence, long namespace, byte[] sha256,
      byte[] outcome) throws SQLException {
    write(JournalRows.INSERT_COMMAND, principal, sequence, namespace, sha256, outcome);
  }

  @Override
  public void recordRefusal(long principal, long sequence, long namespace, byte[] sha256,
      byte[] outcome, long refusedMillis) throws SQLException {
    write(JournalRows.INSERT_REFUSAL, principal, sequence, namespace, sha256, outcome,
        refusedMillis);
  }

  @Override
  public Optional<Upload> upload(long principal, long namespace) throws SQLException {
    return read(JournalRows.SELECT_UPLOAD,
        r -> r.next() ? Optional.of(JournalRows.upload(r)) : Optional.empty(),
        principal, namespace);
  }

  @Override
  public void beginUpload(long principal, long namespace, long declaredBytes, int parts,
      byte[] sha256, long begunMillis) throws SQLException {
    write(JournalRows.INSERT_UPLOAD, principal, namespace, declaredBytes, parts, sha256,
        UploadState.OPEN.name(), begunMillis);
  }

  /** One statement: the part and the upload's counters. */
  @Override
  public void addPart(long principal, long namespace, int index, byte[] data) throws SQLException {
    write("WITH part AS (INSERT INTO upload_parts (principal, namespace, part_index, data)"
            + " VALUES (?, ?, ?, ?))"
            + " UPDATE uploads SET received_parts = received_parts + 1,"
            + " received_bytes = received_bytes + ? WHERE principal = ? AND namespace = ?",
        principal, namespace, index, data, (long) data.length, principal, namespace);
  }

  @Override
  public void setUploadState(long principal, long namespace, UploadState state)
      throws SQLException {
    write(JournalRows.SET_UPLOAD_STATE, state.name(), principal, namespace);
  }

  @Override
  public byte[] assembled(long principal, long namespace) throws SQLException {
    return read(JournalRows.SELECT_PARTS, r -> {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      while (r.next()) {
        out.writeBytes(r.getBytes(1));
      }
      return out.toByteArray();
    }, principal, namespace);
  }

  /**
   * The next value of the {@code correlations} sequence: unique across replicas without a lock
   * held to commit; a rolled-back transaction's value is skipped, never reused.
   */
  @Override
  public long allocateCorrelation() throws SQLException {
    return read("SELECT nextval('correlations')", r -> {
      r.next();
      return r.getLong(1);
    });
  }

  @Override
  public void insertAccepted(long correlation, long principal, long namespace, byte[] bundleSha256)
      throws SQLException {
    write("INSERT INTO queries (correlation, principal, namespace, bundle_sha256, state, code,"
            + " stage, message, total_rows, limit_amount, required_amount, failed_column,"
            + " released) VALUES (?, ?, ?, ?, ?, '', '', '', 0, 0, 0, '', false)",
        correlation, principal, namespace, bundleSha256, QueryStatus.State.ACCEPTED.name());
  }

  @Override
  public boolean finish(QueryStatus s, byte[] bundleSha256, byte[] manifest, long resultBytes,
      long finishedMillis, long attempt) throws SQLException {
    return update(JournalRows.FINISH, JournalRows.finishArgs(s, bundleSha256, manifest,
        resultBytes, finishedMillis, attempt, PostgresJournal::text)) == 1;
  }

  /** One statement: the conditional claim and the new attempt come back together. */
  @Override
  public OptionalLong claim(long correlation, long owner, String holder, long nowMillis,
      long untilMillis) throws SQLException {
    return read(JournalRows.CLAIM,
        r -> r.next() ? OptionalLong.of(r.getLong(1)) : OptionalLong.empty(),
        owner, text(holder), untilMillis, correlation, QueryStatus.State.ACCEPTED.name(),
        nowMillis, owner);
  }

  @Override
  public boolean renew(long correlation, long owner, long attempt, long untilMillis)
      throws SQLException {
    return update(JournalRows.RENEW, untilMillis, correlation, QueryStatus.State.ACCEPTED.name(),
        attempt, owner) == 1;
  }

  /** The server's clock: {@code clock_timestamp()}, the time of the call, not the transaction's. */
  @Override
  public long leaseClockMillis() throws SQLException {
    return read(LEASE_CLOCK, r -> {
      r.next();
      return r.getLong(1);
    });
  }

  /** Rows another transaction holds are skipped, not waited for (their takeover waits instead). */
  @Override
  public List<Long> expiredLeases(long nowMillis, int limit) throws SQLException {
    return read(JournalRows.EXPIRED_LEASES + " FOR UPDATE SKIP LOCKED", r -> {
      List<Long> out = new ArrayList<>();
      while (r.next()) {
        out.add(r.getLong(1));
      }
      return out;
    }, QueryStatus.State.ACCEPTED.name(), nowMillis, limit);
  }

  /** PostgreSQL text cannot hold NUL; a status must still be recorded, so NUL becomes U+FFFD. */
  private static String text(String s) {
    return s.indexOf('\0') < 0 ? s : s.replace('\0', '\uFFFD');
  }

  @Override
  public List<Retained> oldestRetained(int limit) throws SQLException {
    return read("SELECT correlation, finished_ms, result_bytes FROM queries"
        + " WHERE state = ? AND NOT released ORDER BY finished_ms, correlation LIMIT ?", r -> {
          List<Retained> out = new ArrayList<>();
          while (r.next()) {
            out.add(JournalRows.retained(r));
          }
          return out;
        }, QueryStatus.State.SUCCEEDED.name(), limit);
  }

  @Override
  public long retainedBytes() throws SQLException {
    return read("SELECT COALESCE(SUM(result_bytes), 0) FROM queries"
        + " WHERE state = ? AND NOT released", r -> {
          r.next();
          return r.getLong(1);
        }, QueryStatus.State.SUCCEEDED.name());
  }

  @Override
  public List<LiveManifest> liveManifests(long after, int limit) throws SQLException {
    return read(LIVE_MANIFESTS, JournalRows::liveManifests, QueryStatus.State.SUCCEEDED.name(),
        after, limit);
  }

  private static final String LIVE_MANIFESTS = JournalRows.liveManifests("NOT released");

  @Override
  public boolean release(long correlation) throws SQLException {
    write(JournalRows.DELETE_INLINE, correlation);
    return update("UPDATE queries SET released = true WHERE correlation = ?", correlation) == 1;
  }

  @Override
  public List<Finished> finishedBefore(long cutoffMillis, int limit) throws SQLException {
    return JournalRows.finishedBefore(limit, (state, released, rows) -> read(
        JournalRows.FINISHED_BEFORE, JournalRows::finished, state, released, cutoffMillis, rows));
  }

  @Override
  public void forget(Finished f) throws SQLException {
    JournalRows.forget(f, this::write); // held, as forgetCommand's are
  }

  @Override
  public void forgetCommand(long principal, long sequence) throws SQLException {
    // Held with the statement's other deletes: the page's next read or its commit sends them.
    write(JournalRows.DELETE_COMMAND, principal, sequence);
  }

  @Override
  public void forgetCommand(long principal, long sequence, long namespace) throws SQLException {
    write(JournalRows.DELETE_NAMED_COMMAND, principal, sequence, namespace);
  }

  @Override
  public List<Abandoned> abandonedBefore(long cutoffMillis, int limit) throws SQLException {
    return read(JournalRows.ABANDONED_BEFORE, JournalRows::abandoned, cutoffMillis,
        UploadState.SUBMITTED.name(), limit);
  }

  /** The principal's row lock, which every command's decision takes first (nextSequence). */
  @Override
  public void lockPrincipal(long principal) throws SQLException {
    lockedNext(principal);
  }

  @Override
  public void lockReleases() throws SQLException {
    read("SELECT pg_advisory_xact_lock(?)", r -> null, RELEASE_LOCK);
  }

  /**
   * The release lock in shared mode. No deadlock with a sweep's page: both take the advisory
   * lock before any row, so neither waits for it while holding a row the other needs, and the
   * server queues a shared request behind a waiting exclusive one, so operators' releases do not
   * starve the sweep.
   */
  @Override
  public void shareReleases() throws SQLException {
    read("SELECT pg_advisory_xact_lock_shared(?)", r -> null, RELEASE_LOCK);
  }

  @Override
  public void forgetUpload(long principal, long namespace) throws SQLException {
    JournalRows.forgetUpload(principal, namespace, this::write); // held, as forgetCommand's are
  }

  @Override
  public int forgetRefusedBefore(long cutoffMillis, int limit) throws SQLException {
    return update(FORGET_REFUSED, cutoffMillis, limit);
  }

  @Override
  public void storeInline(long correlation, int index, byte[] data) throws SQLException {
    write(JournalRows.INSERT_INLINE, correlation, index, data);
  }

  @Override
  public Optional<byte[]> inlineSegment(long correlation, int index) throws SQLException {
    return read(JournalRows.SELECT_INLINE,
        r -> r.next() ? Optional.of(r.getBytes(1)) : Optional.empty(), correlation, index);
  }

  /**
   * A durable commit that writes a row, when a deferred commit of this journal may not be flushed
   * yet: the server flushes its WAL in order, so this covers every earlier commit.
   */
  @Override
  public void flush() throws SQLException {
    if (deferredCovered.get() >= deferredCommits.get()) {
      return; // a durable commit since the last deferred one flushed it (the common case)
    }
    sync();
  }

  /**
   * The write of {@link #sync}: a row of the session's own (its backend's process id, folded
   * into {@value #SYNC_ROWS} rows). The row lock is held until the commit's WAL flush returns,
   * so syncs writing one shared row waited for each other's flushes one by one; on rows of
   * their own, concurrent syncs of every replica share the server's group flushes. Two live
   * sessions folded onto one row only wait as before. From row 2: row 1 is the one earlier
   * versions write, which a replica not yet upgraded still does.
   */
  static final String SYNC = "INSERT INTO flushes (id, count) VALUES (pg_backend_pid() % "
      + PostgresJournal.SYNC_ROWS + " + 2, 1) ON CONFLICT (id) DO UPDATE"
      + " SET count = flushes.count + 1";
  /** How many rows {@link #SYNC} folds the sessions onto (the table's size bound). */
  static final int SYNC_ROWS = 1024;

  /** The server flushes its WAL up to this commit's record, past every earlier commit's. */
  @Override
  public void sync() throws SQLException {
    transaction(Durability.DURABLE, () -> update(SYNC));
  }

  @Override
  public Optional<SavedQuery> query(long correlation) throws SQLException {
    return read(JournalRows.SELECT_QUERY, r -> r.next()
        ? Optional.of(JournalRows.savedQuery(correlation, r, r.getBoolean(13)))
        : Optional.empty(), correlation);
  }

  @Override
  public long rightsEpoch() throws SQLException {
    return read(JournalRows.RIGHTS_EPOCH, r -> r.next() ? r.getLong(1) : 0L);
  }

  /**
   * One statement in autocommit on a pooled connection: one round trip, no BEGIN or COMMIT (the
   * pool restores the connection's transactional mode when it takes it back). A failure is
   * the caller's to report: nothing was recorded.
   */
  @Override
  public long readRightsEpoch() throws SQLException {
    try {
      return readRightsEpochOnce();
    } catch (SQLException e) {
      // As a transaction does: a connection broken in use (the server restarted) is retried once
      // on a fresh one, the others retired with it; a read has nothing to undo.
      if (!connectionLost(e) || e instanceof SQLTransientConnectionException) {
        throw e;
      }
      pool.getHikariPoolMXBean().softEvictConnections();
      return readRightsEpochOnce();
    }
  }

  private long readRightsEpochOnce() throws SQLException {
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(true);
      try (PreparedStatement p = c.prepareStatement(JournalRows.RIGHTS_EPOCH);
          ResultSet r = p.executeQuery()) {
        return r.next() ? r.getLong(1) : 0;
      }
    }
  }

  @Override
  public Optional<RightsVersion> rights() throws SQLException {
    return read(JournalRows.RIGHTS_CURRENT,
        r -> r.next() ? Optional.of(JournalRows.rightsVersion(r)) : Optional.empty());
  }

  /**
   * Locks the head row ({@code SELECT … FOR UPDATE}, the row V5 seeds): publishes of every replica
   * run one after the other, and each compares against the head its predecessor committed.
   */
  @Override
  public long publishRights(byte[] sha256, byte[] document) throws SQLException {
    long[] head = read("SELECT epoch, content_sha256 FROM rights_head WHERE id = 1 FOR UPDATE",
        r -> {
          if (!r.next()) {
            throw new SQLException("the rights head row is missing (migration V5)");
          }
          // {epoch, 1 when its content is this document}
          return new long[] {r.getLong(1), Arrays.equals(r.getBytes(2), sha256) ? 1 : 0};
        });
    if (head[1] == 1) {
      return head[0];
    }
    long next = head[0] + 1;
    write("WITH version AS (INSERT INTO rights_versions (epoch, content_sha256, document)"
            + " VALUES (?, ?, ?)) UPDATE rights_head SET epoch = ?, content_sha256 = ?"
            + " WHERE id = 1", next, sha256, document, next, sha256);
    write(JournalRows.FORGET_RIGHTS, next - RIGHTS_VERSIONS_KEPT);
    return next;
  }

  /** Every replica of the deployment writes this database. */
  @Override
  public boolean soleWriter() {
    return false;
  }

  /** This transaction's session value of a server setting (the tests check the guarantees). */
  String show(String setting) throws SQLException {
    return read("SELECT current_setting(?)", r -> {
      r.next();
      return r.getString(1);
    }, setting);
  }

  /** Runs a write whose row count the caller needs (held writes ahead of it); returns it. */
  private int update(String sql, Object... args) throws SQLException {
    Tx tx = tx();
    int n = execute(tx, sql, args, (p, rows) -> p.getUpdateCount());
    tx.wrote |= n > 0;
    return n;
  }

  /**
   * PostgreSQL's disk_full (SQLSTATE 53100) raised before the commit was sent: the server
   * aborted the transaction, so nothing of it was recorded. The same error from the commit
   * itself is not claimed: that outcome is the server's to tell.
   */
  @Override
  public boolean isFullWithNothingRecorded(SQLException failure) {
    if (!(failure instanceof NotCommitted)) {
      return false;
    }
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof SQLException e && DISK_FULL.equals(e.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  /** The server's file systems are not this process's to measure. */
  @Override
  public long usableBytes() {
    return -1;
  }

  @Override
  public void observeCommits(LongConsumer observer) {
    this.commitObserver = observer;
  }

  /** Closes the pool: every connection, once handed back, is closed. */
  @Override
  public void close() {
    pool.close();
  }

  private static Throwable root(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t;
  }

  /** The journal connections' read timeout: the server's longest bounded wait plus 10 s. */
  static long socketTimeoutSeconds(PostgresSettings settings) {
    return socketTimeoutSeconds(settings.statementTimeout(), settings.lockTimeout());
  }

  /** A read timeout past a session's statement and lock timeouts, by 10 s. */
  private static long socketTimeoutSeconds(Duration statement, Duration lock) {
    long longest = Math.max(statement.toMillis(), lock.toMillis());
    return (longest + 999) / 1000 + 10;
  }

  private static String rootMessage(Throwable e) {
    String m = root(e).getMessage();
    return m == null ? root(e).getClass().getSimpleName() : m;
  }

  private static String rootState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null) {
        return s.getSQLState();
      }
    }
    return null;
  }
}
