package io.transit.flight.nativequery.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.transit.flight.nativequery.embedded.JournalRows;
import io.transit.flight.nativequery.embedded.JournalStore;
import io.transit.flight.proto.QueryStatus;
import java.io.ByteArrayOutputStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
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
 * <p>Round trips: each row-level call is one statement; {@code BEGIN} travels with the first
 * (the driver sends it lazily) and {@code COMMIT} is one more. The driver keeps each
 * connection's parsed statements, so statements are prepared per call without a parse round
 * trip after the first uses.
 */
public final class PostgresJournal implements JournalStore {
  /** SQLSTATE of PostgreSQL's "could not extend file": its storage is full. */
  private static final String DISK_FULL = "53100";

  /**
   * A deferred commit of this journal may not be flushed yet. Any thread sets and clears it; a
   * race only costs one unneeded flush (cleared before the flush, set again when it fails).
   */
  private volatile boolean deferredPending;

  /** Where the migrations live on the class path. */
  static final String MIGRATIONS = "classpath:io/transit/flight/nativequery/postgres/migration";

  private final HikariDataSource pool;
  // The connection of the transaction running on this thread; set and cleared by transaction().
  private final ThreadLocal<Connection> current = new ThreadLocal<>();
  /** Told each commit's duration in nanoseconds (operations metrics); set once after open. */
  private volatile LongConsumer commitObserver = nanos -> {};

  private PostgresJournal(HikariDataSource pool) {
    this.pool = pool;
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
    // Fail at start, not at the first statement, when the database is unreachable.
    c.setInitializationFailTimeout(settings.connectionTimeout().toMillis());
    c.addDataSourceProperty("ApplicationName", "transit-flight");
    c.addDataSourceProperty("tcpKeepAlive", "true");
    c.addDataSourceProperty("connectTimeout",
        Long.toString(Math.max(1, settings.connectionTimeout().toSeconds())));
    // The session settings the journal's guarantees rest on, whatever the server's defaults:
    // every commit waits for its WAL flush, and no wait (lock, statement, idle transaction)
    // is unbounded.
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
    try {
      Flyway.configure()
          .dataSource(pool)
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
  }

  private <T> T attempt(Durability durability, Work<T> work) throws SQLException {
    Connection c;
    try {
      c = pool.getConnection();
    } catch (SQLException e) {
      throw new NotCommitted("no journal connection within the timeout", e);
    }
    current.set(c);
    try {
      T result;
      try {
        if (durability == Durability.DEFERRED) {
          // This transaction's commit returns before its WAL is flushed; the next durable
          // commit (of any session: the server flushes its WAL in order) or flush() covers it.
          try (java.sql.Statement st = c.createStatement()) {
            st.execute("SET LOCAL synchronous_commit = off");
          }
        }
        result = work.run();
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
      long started = System.nanoTime();
      c.commit();
      commitObserver.accept(System.nanoTime() - started);
      if (durability == Durability.DEFERRED) {
        deferredPending = true;
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

  /** The connection of this thread's transaction. */
  private Connection connection() {
    Connection c = current.get();
    if (c == null) {
      throw new IllegalStateException("journal row access outside a transaction");
    }
    return c;
  }

  /**
   * The principal's next sequence, its row locked until the transaction ends. An absent row is
   * inserted holding {@code first} (so there is a row to lock): a principal's row appears at its
   * first admission or first sequence read.
   */
  @Override
  public long nextSequence(long principal, long first) throws SQLException {
    Optional<Long> locked = lockPrincipal(principal);
    if (locked.isPresent()) {
      return locked.get();
    }
    // Another transaction inserting the same principal makes this one wait for its end, then
    // do nothing; the lock below then finds its row.
    update("INSERT INTO principals (principal, next_sequence) VALUES (?, ?)"
        + " ON CONFLICT (principal) DO NOTHING", principal, first);
    return lockPrincipal(principal).orElseThrow(
        () -> new SQLException("the principal's row vanished while being locked"));
  }

  private Optional<Long> lockPrincipal(long principal) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(
        "SELECT next_sequence FROM principals WHERE principal = ? FOR UPDATE")) {
      p.setLong(1, principal);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? Optional.of(r.getLong(1)) : Optional.empty();
      }
    }
  }

  @Override
  public void setNextSequence(long principal, long next) throws SQLException {
    update("INSERT INTO principals (principal, next_sequence) VALUES (?, ?)"
        + " ON CONFLICT (principal) DO UPDATE SET next_sequence = EXCLUDED.next_sequence",
        principal, next);
  }

  @Override
  public Optional<Recorded> command(long principal, long sequence) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.SELECT_COMMAND)) {
      p.setLong(1, principal);
      p.setLong(2, sequence);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? Optional.of(JournalRows.recorded(r)) : Optional.empty();
      }
    }
  }

  @Override
  public void recordCommand(long principal, long sequence, byte[] sha256, byte[] outcome)
      throws SQLException {
    update(JournalRows.INSERT_COMMAND, principal, sequence, sha256, outcome);
  }

  @Override
  public Optional<Upload> upload(long principal, long namespace) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.SELECT_UPLOAD)) {
      p.setLong(1, principal);
      p.setLong(2, namespace);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? Optional.of(JournalRows.upload(r)) : Optional.empty();
      }
    }
  }

  @Override
  public void beginUpload(
      long principal, long namespace, long declaredBytes, int parts, byte[] sha256)
      throws SQLException {
    update(JournalRows.INSERT_UPLOAD, principal, namespace, declaredBytes, parts, sha256,
        UploadState.OPEN.name());
  }

  /** One round trip: the part and the upload's counters in one statement. */
  @Override
  public void addPart(long principal, long namespace, int index, byte[] data) throws SQLException {
    update("WITH part AS (INSERT INTO upload_parts (principal, namespace, part_index, data)"
            + " VALUES (?, ?, ?, ?))"
            + " UPDATE uploads SET received_parts = received_parts + 1,"
            + " received_bytes = received_bytes + ? WHERE principal = ? AND namespace = ?",
        principal, namespace, index, data, (long) data.length, principal, namespace);
  }

  @Override
  public void setUploadState(long principal, long namespace, UploadState state)
      throws SQLException {
    update(JournalRows.SET_UPLOAD_STATE, state.name(), principal, namespace);
  }

  @Override
  public byte[] assembled(long principal, long namespace) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.SELECT_PARTS)) {
      p.setLong(1, principal);
      p.setLong(2, namespace);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.writeBytes(r.getBytes(1));
        }
      }
      return out.toByteArray();
    }
  }

  /**
   * The next value of the {@code correlations} sequence: unique across replicas without a lock
   * held to commit; a rolled-back transaction's value is skipped, never reused.
   */
  @Override
  public long allocateCorrelation() throws SQLException {
    try (PreparedStatement p = connection().prepareStatement("SELECT nextval('correlations')");
        ResultSet r = p.executeQuery()) {
      r.next();
      return r.getLong(1);
    }
  }

  @Override
  public void insertAccepted(long correlation, long principal, long namespace, byte[] bundleSha256)
      throws SQLException {
    update("INSERT INTO queries (correlation, principal, namespace, bundle_sha256, state, code,"
            + " stage, message, total_rows, limit_amount, required_amount, failed_column,"
            + " released) VALUES (?, ?, ?, ?, ?, '', '', '', 0, 0, 0, '', false)",
        correlation, principal, namespace, bundleSha256, QueryStatus.State.ACCEPTED.name());
  }

  @Override
  public boolean finish(QueryStatus s, byte[] manifest, long resultBytes, long finishedMillis,
      long attempt) throws SQLException {
    return update(JournalRows.FINISH, JournalRows.finishArgs(s, manifest, resultBytes,
        finishedMillis, attempt, PostgresJournal::text)) == 1;
  }

  /** One statement: the conditional claim and the new attempt come back together. */
  @Override
  public java.util.OptionalLong claim(long correlation, long owner, String holder, long nowMillis,
      long untilMillis) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(
        "UPDATE queries SET lease_owner = ?, lease_holder = ?, lease_until_ms = ?,"
            + " attempt = attempt + 1 WHERE correlation = ? AND state = ?"
            + " AND (lease_until_ms <= ? OR lease_owner = ?) RETURNING attempt")) {
      p.setLong(1, owner);
      p.setString(2, text(holder));
      p.setLong(3, untilMillis);
      p.setLong(4, correlation);
      p.setString(5, QueryStatus.State.ACCEPTED.name());
      p.setLong(6, nowMillis);
      p.setLong(7, owner);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? java.util.OptionalLong.of(r.getLong(1)) : java.util.OptionalLong.empty();
      }
    }
  }

  @Override
  public boolean renew(long correlation, long owner, long attempt, long untilMillis)
      throws SQLException {
    return update(JournalRows.RENEW, untilMillis, correlation, QueryStatus.State.ACCEPTED.name(),
        attempt, owner) == 1;
  }

  @Override
  public List<Long> expiredLeases(long nowMillis, int limit) throws SQLException {
    List<Long> out = new ArrayList<>();
    try (PreparedStatement p = connection().prepareStatement(JournalRows.EXPIRED_LEASES)) {
      p.setString(1, QueryStatus.State.ACCEPTED.name());
      p.setLong(2, nowMillis);
      p.setInt(3, limit);
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.add(r.getLong(1));
        }
      }
    }
    return out;
  }

  /** PostgreSQL text cannot hold NUL; a status must still be recorded, so NUL becomes U+FFFD. */
  private static String text(String s) {
    return s.indexOf('\0') < 0 ? s : s.replace('\0', '\uFFFD');
  }

  @Override
  public List<Retained> retained() throws SQLException {
    List<Retained> out = new ArrayList<>();
    try (PreparedStatement p = connection().prepareStatement(
        "SELECT correlation, finished_ms, result_bytes FROM queries"
            + " WHERE state = ? AND NOT released ORDER BY finished_ms, correlation")) {
      p.setString(1, QueryStatus.State.SUCCEEDED.name());
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.add(JournalRows.retained(r));
        }
      }
    }
    return out;
  }

  @Override
  public List<byte[]> liveManifests() throws SQLException {
    List<byte[]> out = new ArrayList<>();
    try (PreparedStatement p = connection().prepareStatement("SELECT manifest FROM queries"
        + " WHERE state = ? AND NOT released AND manifest IS NOT NULL")) {
      p.setString(1, QueryStatus.State.SUCCEEDED.name());
      try (ResultSet r = p.executeQuery()) {
        while (r.next()) {
          out.add(r.getBytes(1));
        }
      }
    }
    return out;
  }

  @Override
  public boolean release(long correlation) throws SQLException {
    update(JournalRows.DELETE_INLINE, correlation);
    return update("UPDATE queries SET released = true WHERE correlation = ?", correlation) == 1;
  }

  @Override
  public void storeInline(long correlation, int index, byte[] data) throws SQLException {
    update(JournalRows.INSERT_INLINE, correlation, index, data);
  }

  @Override
  public Optional<byte[]> inlineSegment(long correlation, int index) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.SELECT_INLINE)) {
      p.setLong(1, correlation);
      p.setInt(2, index);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? Optional.of(r.getBytes(1)) : Optional.empty();
      }
    }
  }

  /**
   * A durable commit that writes a row, when a deferred commit of this journal may not be flushed
   * yet: the server flushes its WAL in order, so this covers every earlier commit.
   */
  @Override
  public void flush() throws SQLException {
    if (!deferredPending) {
      return;
    }
    deferredPending = false;
    try {
      transaction(Durability.DURABLE,
          () -> update("UPDATE flushes SET count = count + 1 WHERE id = 1"));
    } catch (SQLException | RuntimeException e) {
      deferredPending = true;
      throw e;
    }
  }

  @Override
  public Optional<SavedQuery> query(long correlation) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.SELECT_QUERY)) {
      p.setLong(1, correlation);
      try (ResultSet r = p.executeQuery()) {
        return r.next()
            ? Optional.of(JournalRows.savedQuery(correlation, r, r.getBoolean(13)))
            : Optional.empty();
      }
    }
  }

  @Override
  public long rightsEpoch() throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.RIGHTS_EPOCH);
        ResultSet r = p.executeQuery()) {
      return r.next() ? r.getLong(1) : 0;
    }
  }

  @Override
  public Optional<RightsVersion> rights() throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(JournalRows.RIGHTS_CURRENT);
        ResultSet r = p.executeQuery()) {
      return r.next() ? Optional.of(JournalRows.rightsVersion(r)) : Optional.empty();
    }
  }

  /**
   * Locks the head row ({@code SELECT … FOR UPDATE}, the row V5 seeds): publishes of every replica
   * run one after the other, and each compares against the head its predecessor committed.
   */
  @Override
  public long publishRights(byte[] sha256, byte[] document) throws SQLException {
    long epoch;
    try (PreparedStatement p = connection().prepareStatement(
        "SELECT epoch, content_sha256 FROM rights_head WHERE id = 1 FOR UPDATE");
        ResultSet r = p.executeQuery()) {
      if (!r.next()) {
        throw new SQLException("the rights head row is missing (migration V5)");
      }
      if (java.util.Arrays.equals(r.getBytes(2), sha256)) {
        return r.getLong(1);
      }
      epoch = r.getLong(1);
    }
    long next = epoch + 1;
    update("WITH version AS (INSERT INTO rights_versions (epoch, content_sha256, document)"
            + " VALUES (?, ?, ?)) UPDATE rights_head SET epoch = ?, content_sha256 = ?"
            + " WHERE id = 1", next, sha256, document, next, sha256);
    return next;
  }

  /** This transaction's session value of a server setting (the tests check the guarantees). */
  String show(String setting) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement("SELECT current_setting(?)")) {
      p.setString(1, setting);
      try (ResultSet r = p.executeQuery()) {
        r.next();
        return r.getString(1);
      }
    }
  }

  private int update(String sql, Object... args) throws SQLException {
    try (PreparedStatement p = connection().prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        p.setObject(i + 1, args[i]);
      }
      return p.executeUpdate();
    }
  }

  /**
   * PostgreSQL's disk_full (SQLSTATE 53100) raised before the commit was sent: the server
   * aborted the transaction, so nothing of it was recorded. The same error from the commit
   * itself is not claimed: that outcome is the server's to tell.
   */
  /** Every replica of the deployment writes this database. */
  @Override
  public boolean soleWriter() {
    return false;
  }

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
