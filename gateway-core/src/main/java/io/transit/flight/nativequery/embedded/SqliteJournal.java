package io.transit.flight.nativequery.embedded;

import io.transit.flight.proto.QueryStatus;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded {@link JournalStore} (the default): SQLite in WAL mode. A durable transaction
 * commits with {@code synchronous=FULL} (the WAL is fsynced: it survives kill -9 and power loss);
 * a deferred one with {@code synchronous=NORMAL} (written to the WAL, no fsync: it survives kill
 * -9, and a power loss keeps a prefix of the WAL, because SQLite recovers frames only up to the
 * first whose cumulative checksum fails). The next fsync covers every frame before it. The SQL
 * itself is portable ({@code nativequery.postgres.PostgresJournal}, the shared journal, keeps the
 * same tables).
 *
 * <p>One JDBC connection in auto-commit mode, guarded by this object's monitor: {@link
 * #transaction} sets the commit's safety level (SQLite refuses to change it inside a transaction),
 * then runs {@code BEGIN}, the work and {@code COMMIT} under the monitor for the whole unit of
 * work, so callers on any thread (senders, query runners, readers) see each other's
transactions whole. The row-level methods must only be called inside {@link #transaction}; they
 * reuse one cached prepared statement per SQL text (closing each result set resets it); only
 * the retention sweep's {@link #retainedBytesAside} and {@link #liveManifestsAside} read on a
 * second, read-only connection, guarded by its own lock.
 * Unsigned 64-bit ids are stored as their signed bit patterns. The WAL is checkpointed by a
 * {@link WalCheckpointer} on a thread of its own, not by the commit that fills it.
 */
final class SqliteJournal implements JournalStore {
  private static final Logger log = LoggerFactory.getLogger(SqliteJournal.class);
  /** The journal's file name in the engine directory. */
  static final String FILE = "journal.sqlite";
  // A journal created now keys its small-row tables by their primary key alone (WITHOUT ROWID;
  // queries by its rowid, INTEGER PRIMARY KEY): an insert then writes one B-tree page instead of
  // a table page and its key's index page: four of a statement's 37 WAL frames
  // (docs/native-engine.md, at its top). Rows larger than about a fifth of a page (parts, inline
  // segments) stay in rowid tables, where they fit a page. A journal created earlier keeps its
  // tables as they are; the statements below read and write both alike.
  private static final String[] SCHEMA = {
    "CREATE TABLE IF NOT EXISTS principals (principal BIGINT PRIMARY KEY,"
        + " next_sequence BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS commands (principal BIGINT NOT NULL, sequence BIGINT NOT NULL,"
        + " command_sha256 BLOB NOT NULL, outcome BLOB NOT NULL, PRIMARY KEY (principal, sequence))"
        + " WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS uploads (principal BIGINT NOT NULL, namespace BIGINT NOT NULL,"
        + " declared_bytes BIGINT NOT NULL, part_count INTEGER NOT NULL, bundle_sha256 BLOB NOT NULL,"
        + " received_parts INTEGER NOT NULL, received_bytes BIGINT NOT NULL,"
        + " state VARCHAR(16) NOT NULL, PRIMARY KEY (principal, namespace)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS upload_parts (principal BIGINT NOT NULL,"
        + " namespace BIGINT NOT NULL, part_index INTEGER NOT NULL, data BLOB NOT NULL,"
        + " PRIMARY KEY (principal, namespace, part_index))",
    "CREATE TABLE IF NOT EXISTS counters (name VARCHAR(32) PRIMARY KEY, value BIGINT NOT NULL)",
    // Small results' segments (ResultWriter.INLINE_RESULT_BYTES): written with the manifest in
    // one commit, deleted by the release. A journal from before them gains the table at open.
    "CREATE TABLE IF NOT EXISTS inline_segments (correlation BIGINT NOT NULL,"
        + " segment_index INTEGER NOT NULL, data BLOB NOT NULL,"
        + " PRIMARY KEY (correlation, segment_index))",
    // The deployment's rights (JournalStore#publishRights): every version, and one head row
    // naming the current one, so a decision's epoch check reads one row by key.
    "CREATE TABLE IF NOT EXISTS rights_versions (epoch BIGINT PRIMARY KEY,"
        + " content_sha256 BLOB NOT NULL, document BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rights_head (id INTEGER PRIMARY KEY, epoch BIGINT NOT NULL,"
        + " content_sha256 BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS queries (correlation INTEGER PRIMARY KEY,"
        + " principal BIGINT NOT NULL, namespace BIGINT NOT NULL, bundle_sha256 BLOB NOT NULL,"
        + " state VARCHAR(16) NOT NULL, code VARCHAR(64) NOT NULL, stage VARCHAR(32) NOT NULL,"
        + " message VARCHAR(512) NOT NULL, manifest_sha256 BLOB, total_rows BIGINT NOT NULL,"
        + " limit_amount BIGINT NOT NULL, required_amount BIGINT NOT NULL,"
        + " failed_column VARCHAR(256) NOT NULL, released INTEGER NOT NULL, manifest BLOB)",
  };
  // Added by the retention policy, the execution leases and the history bound; a journal written
  // before them gains them at open. An ACCEPTED row without a lease (lease_until_ms 0) is
  // claimable at once.
  private static final String[][] ADDED_COLUMNS = {
    {"queries", "finished_ms",
        "ALTER TABLE queries ADD COLUMN finished_ms BIGINT NOT NULL DEFAULT 0"},
    {"queries", "result_bytes",
        "ALTER TABLE queries ADD COLUMN result_bytes BIGINT NOT NULL DEFAULT 0"},
    {"queries", "lease_owner",
        "ALTER TABLE queries ADD COLUMN lease_owner BIGINT NOT NULL DEFAULT 0"},
    {"queries", "lease_holder",
        "ALTER TABLE queries ADD COLUMN lease_holder VARCHAR(256) NOT NULL DEFAULT ''"},
    {"queries", "lease_until_ms",
        "ALTER TABLE queries ADD COLUMN lease_until_ms BIGINT NOT NULL DEFAULT 0"},
    {"queries", "attempt", "ALTER TABLE queries ADD COLUMN attempt BIGINT NOT NULL DEFAULT 0"},
    // The exceeded bound of a budget failure, for its diagnostic (issue 15 item 6).
    {"queries", "failed_bound",
        "ALTER TABLE queries ADD COLUMN failed_bound VARCHAR(64) NOT NULL DEFAULT ''"},
    // The history bound's (Retention#forgetHistory): the namespace a command named (none in
    // records from before it), and when an upload was begun.
    {"commands", "namespace", "ALTER TABLE commands ADD COLUMN namespace BIGINT"},
    {"uploads", "begun_ms", "ALTER TABLE uploads ADD COLUMN begun_ms BIGINT NOT NULL DEFAULT 0"},
    // When a refusal was decided (none in every other record, and in refusals recorded before it).
    {"commands", "refused_ms", "ALTER TABLE commands ADD COLUMN refused_ms BIGINT"},
  };
  // The takeover scan reads ACCEPTED rows by lease expiry; without it each scan reads every row.
  private static final String LEASE_INDEX =
      "CREATE INDEX IF NOT EXISTS queries_lease ON queries (state, lease_until_ms)";
  // The retention sweep pages through unreleased results oldest first and sums their bytes from
  // this index alone; without it each sweep sorts every row under the journal's monitor.
  private static final String RETAINED_INDEX = "CREATE INDEX IF NOT EXISTS queries_retained ON"
      + " queries (state, released, finished_ms, correlation, result_bytes)";
  // The history bound reads unsubmitted uploads oldest first (JournalRows.ABANDONED_BEFORE).
  private static final String BEGUN_INDEX = "CREATE INDEX IF NOT EXISTS uploads_begun ON"
      + " uploads (begun_ms, principal, namespace)";
  // The history bound reads refusals oldest first (JournalRows.FORGET_REFUSED). Partial: an
  // accepted command, a statement's every command, adds no entry to it.
  private static final String REFUSED_INDEX = "CREATE INDEX IF NOT EXISTS commands_refused ON"
      + " commands (refused_ms) WHERE refused_ms IS NOT NULL";
  private static final String FORGET_REFUSED = JournalRows.FORGET_REFUSED.formatted("");
  /**
   * The page size of a new journal. A statement's four transactions rewrite about thirty pages
   * (each a WAL frame, copied, checksummed and then flushed by the submit's fsync) to change a few
   * hundred bytes of small rows: at 1 KiB against SQLite's default 4 KiB each frame costs a
   * quarter of the copying, checksumming and writeback (docs/performance.md, thirteenth round).
   */
  static final int PAGE_BYTES = 1024;
  /** SQLite's primary result code for a snapshot or lock held by another connection. */
  private static final int SQLITE_BUSY = 5;
  /** Runs of one transaction that another connection's commits may cut short (see transaction). */
  private static final int BUSY_RUNS = 16;

  /** SQLite's primary result code for a full file system. */
  private static final int SQLITE_FULL = 13;

  private final Path file;
  // @GuardedBy("this"): replaced only by reconnect(), after a rollback that failed.
  private Connection connection;
  /** The driver's handle: its change counter tells which commits wrote. @GuardedBy("this") */
  private org.sqlite.core.DB database;
  // @GuardedBy("this"): a rollback failed, so the connection's state is unknown (a statement of
  // the failed work may still be in progress, holding the transaction open); the next
  // transaction starts on a fresh connection.
  private boolean broken;
  /** Told each commit's duration in nanoseconds (operations metrics); set once after open. */
  private volatile LongConsumer commitObserver = nanos -> {};
  private final AtomicLong failures = new AtomicLong(); // any thread: transactions failed
  // @GuardedBy("this"): one prepared statement per distinct SQL text of this class (a fixed,
  // small set), kept for the connection's life: preparing costs more than running most of them.
  private final Map<String, PreparedStatement> statements = new HashMap<>();
  // @GuardedBy("this"): whether the connection's synchronous setting is FULL (set at open).
  private boolean synchronousFull = true;
  // @GuardedBy("this"): a deferred commit that wrote is not yet followed by a durable one that did.
  // True at open: a predecessor killed with -9 may have left deferred frames in the WAL that no
  // fsync covered, and the first flush must cover them too (until 2026-12-06 only the rights
  // published at every start happened to).
  private boolean deferredPending = true;
  // @GuardedBy("this"): durable commits that wrote, i.e. WAL fsyncs (tests count them).
  private long durableCommits;

  /** Checkpoints the WAL off the committing threads; closed with the journal. */
  private final WalCheckpointer checkpointer;
  // The retention sweep's reads (retainedBytesAside, liveManifestsAside) on a connection of its
  // own, opened at first use: a WAL reader's snapshot, so the sum (15 ms over 150,000 retained
  // results, 130 ms from a cold page cache) and the manifests (an index entry per retained
  // result) run while commands commit instead of inside this object's monitor.
  private final Object asideLock = new Object();
  private Connection aside; // @GuardedBy("asideLock")

  private final JournalReserve reserve;
  // The journal file's identity (inode) at open: a file removed or replaced under the daemon keeps
  // taking commits through the open descriptor, into a file no restart would find.
  private final Object fileKey;
  // Set once by checkFile (the retention sweep's thread), read by every transaction: why the
  // journal takes no more transactions, or null.
  private volatile String lostFile;
  /**
   * Written beside the journal once it exists: a journal missing at a later open was lost (deleted,
   * a restore that left it out), and an empty one in its place would break exactly-once, so the
   * open refuses until the operator restores it or removes this file.
   */
  static final String CREATED_MARKER = "journal.created";

  private SqliteJournal(Connection connection, Path file, WalCheckpointer checkpointer)
      throws SQLException {
    this.connection = connection;
    this.file = file;
    this.reserve = new JournalReserve(file);
    this.fileKey = fileKeyAtOpen(file);
    this.checkpointer = checkpointer;
    this.database = connection.unwrap(org.sqlite.SQLiteConnection.class).getDatabase();
  }

  static SqliteJournal open(Path file) throws SQLException {
    // A file system a run before left full: room to recover the WAL and to release results.
    new JournalReserve(file).atOpen();
    Path created = file.toAbsolutePath().resolveSibling(CREATED_MARKER);
    if (!Files.exists(file) && Files.exists(created)) {
      throw new SQLException(file + " is missing, but this state directory had a journal ("
          + created.getFileName() + "): a new, empty one would admit again every statement the"
          + " lost one recorded; restore it from a backup (docs/operations.md), or remove "
          + created + " to start with an empty journal");
    }
    Connection c = connect(file);
    try {
      if (!Files.exists(created)) {
        PrivateFiles.file(created);
      }
    } catch (IOException e) {
      c.close();
      throw new SQLException("journal " + created + ": cannot create: " + e.getMessage(), e);
    }
    WalCheckpointer checkpointer = null;
    try {
      checkpointer = WalCheckpointer.open(file);
      return new SqliteJournal(c, file, checkpointer);
    } catch (SQLException e) {
      if (checkpointer != null) {
        checkpointer.close();
      }
      c.close();
      throw e;
    }
  }

  /** Opens the connection (auto-commit: transactions are explicit) and creates the schema. */
  private static Connection connect(Path file) throws SQLException {
    try {
      // SQLite would create the file, and then its WAL and index with the same mode, under the
      // umask: the journal holds every caller's commands and results.
      PrivateFiles.file(file);
    } catch (IOException e) {
      throw new SQLException("journal " + file + ": cannot create: " + e.getMessage(), e);
    }
    Properties props = new Properties();
    // Nothing here reads generated keys; left on, every INSERT runs a last_insert_rowid() query.
    props.setProperty("jdbc.get_generated_keys", "false");
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath(), props);
    try (Statement s = c.createStatement()) {
      // Before anything creates the file: a journal already written keeps its page size.
      s.execute("PRAGMA page_size=" + PAGE_BYTES);
      s.execute("PRAGMA journal_mode=WAL");
      s.execute("PRAGMA synchronous=FULL");
      s.execute("PRAGMA busy_timeout=10000");
      // Checkpoints run on WalCheckpointer's thread; this is only the backstop.
      s.execute("PRAGMA wal_autocheckpoint=" + WalCheckpointer.BACKSTOP_PAGES);
      for (String ddl : SCHEMA) {
        s.execute(ddl);
      }
      addMissingColumns(s, file.toAbsolutePath().toString());
    } catch (SQLException e) {
      c.close();
      throw e;
    }
    return c;
  }

  /**
   * Adds the retention and history columns to an older journal, then admits its format ({@link
   * JournalFormat}; a journal a newer build wrote is refused with nothing changed). Results
   * finished before have no recorded time: they count as finished now, so an upgrade does not
   * expire every earlier result at once.
   *
   * <p>One transaction (SQLite's DDL is transactional), taken for writing before the columns are
   * read: whether a column is back-filled is decided by its absence, so a column committed without
   * its back-fill (a kill between two auto-commits) would keep 0 for good — every earlier result
   * then past the age bound at the first sweep. Two connections opening one file at once (engines
   * as replicas) upgrade it one after the other, the second finding nothing to add.
   */
  private static void addMissingColumns(Statement s, String journal) throws SQLException {
    s.execute("BEGIN IMMEDIATE");
    try {
      upgrade(s);
      JournalFormat.admitSqlite(s, journal);
      s.execute("COMMIT");
    } catch (SQLException | RuntimeException e) {
      try {
        s.execute("ROLLBACK");
      } catch (SQLException rollback) {
        e.addSuppressed(rollback); // the connection is closed by the caller either way
      }
      throw e;
    }
  }

  /** {@link #addMissingColumns}'s work, inside its transaction. */
  private static void upgrade(Statement s) throws SQLException {
    Set<String> have = new HashSet<>();
    for (String table : new String[] {"queries", "commands", "uploads"}) {
      try (ResultSet r = s.executeQuery("PRAGMA table_info(" + table + ")")) {
        while (r.next()) {
          have.add(table + "." + r.getString("name"));
        }
      }
    }
    for (String[] c : ADDED_COLUMNS) {
      if (!have.contains(c[0] + "." + c[1])) {
        s.execute(c[2]);
      }
    }
    long now = System.currentTimeMillis();
    if (!have.contains("queries.finished_ms")) {
      s.execute("UPDATE queries SET finished_ms = " + now + " WHERE state <> 'ACCEPTED'");
    }
    if (!have.contains("uploads.begun_ms")) {
      // Likewise: an upload from before counts as begun now, not as older than any bound.
      s.execute("UPDATE uploads SET begun_ms = " + now);
    }
    s.execute(LEASE_INDEX);
    s.execute(RETAINED_INDEX);
    s.execute(BEGUN_INDEX);
    s.execute(REFUSED_INDEX);
  }

  /**
   * Runs {@code work} as one transaction: committed whole, or rolled back and rethrown. Several
   * connections may share the file (engines acting as replicas): a transaction whose snapshot
   * another connection's commit made stale fails SQLITE_BUSY before it wrote anything, and runs
   * again on a fresh snapshot, at most {@value #BUSY_RUNS} times (lock waits are busy_timeout's).
   */
  @Override
  public synchronized <T> T transaction(Durability durability, Work<T> work)
      throws SQLException {
    if (lostFile != null) {
      failures.incrementAndGet();
      throw new NotCommitted(lostFile, new SQLException(lostFile));
    }
    for (int run = 1; ; run++) {
      try {
        return once(durability, work);
      } catch (SQLException e) {
        if (run == BUSY_RUNS || !busy(e)) {
          failures.incrementAndGet();
          throw e;
        }
      }
    }
  }

  @Override
  public long failures() {
    return failures.get();
  }

  private static boolean busy(SQLException failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof SQLException e && (e.getErrorCode() & 0xff) == SQLITE_BUSY) {
        return true;
      }
    }
    return false;
  }

  private <T> T once(Durability durability, Work<T> work) throws SQLException {
    if (broken) {
      reconnect();
    }
    boolean durable = durability == Durability.DURABLE;
    if (durable != synchronousFull) {
      prepared(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL").execute();
      synchronousFull = durable;
    }
    long changesBefore = database.total_changes();
    prepared("BEGIN").execute();
    try {
      T result = work.run();
      long started = System.nanoTime();
      prepared("COMMIT").execute();
      commitObserver.accept(System.nanoTime() - started);
      // Only a commit that changed rows writes WAL frames, and only written frames are fsynced.
      if (database.total_changes() != changesBefore) {
        checkpointer.wrote();
        if (durable) {
          durableCommits++;
          deferredPending = false;
        } else {
          deferredPending = true;
        }
      }
      return result;
    } catch (SQLException | RuntimeException | Error e) {
      // A statement that failed in SQLite (SQLITE_FULL in a COMMIT, say) may be left finalized by
      // the driver ("statement is not executing" on its next use): the cache is dropped then.
      // Work that failed on its own (an exception of the caller's) left its statements intact.
      // The rollback runs on a statement of its own either way.
      if (e instanceof SQLException) {
        closeStatements();
      }
      try (Statement rollbackStatement = connection.createStatement()) {
        rollbackStatement.execute("ROLLBACK");
      } catch (SQLException rollback) {
        // "No transaction is active": SQLite already rolled back itself (SQLITE_FULL, a failed
        // COMMIT); the connection is simply outside a transaction. Anything else ("statements in
        // progress") leaves the transaction's state unknown: reconnect before the next one. The
        // first failure is the one that says what happened.
        e.addSuppressed(rollback);
        if (rollback.getMessage() == null
            || !rollback.getMessage().contains("no transaction is active")) {
          broken = true;
        }
      }
      throw e;
    }
  }

  @Override
  public synchronized void flush() throws SQLException {
    if (!deferredPending) {
      return;
    }
    sync();
  }

  @Override
  public synchronized void sync() throws SQLException {
    // An fsync needs a written frame: a commit that changed nothing writes none. The WAL is one
    // file, so its fsync covers every connection's earlier frames.
    transaction(Durability.DURABLE, () -> {
      if (update("UPDATE counters SET value = value + 1 WHERE name = 'flushes'") == 0) {
        update("INSERT INTO counters (name, value) VALUES ('flushes', 1)");
      }
      return null;
    });
  }

  /** Prepared statements cached now (tests: which failures drop the cache). */
  synchronized int cachedStatements() {
    return statements.size();
  }

  /** Background checkpoints completed so far (tests). */
  long checkpoints() {
    return checkpointer.checkpoints();
  }

  /** The journal connection's own {@code wal_autocheckpoint} in pages (tests). */
  synchronized int autoCheckpointPages() throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet r = s.executeQuery("PRAGMA wal_autocheckpoint")) {
      return r.next() ? r.getInt(1) : -1;
    }
  }

  /** Durable commits that wrote so far, i.e. WAL fsyncs (tests: commits per statement). */
  synchronized long durableCommits() {
    return durableCommits;
  }

  /**
   * Replaces a connection left in an unknown state by a fresh one on the same file: closing it
   * ends whatever it still held, and SQLite's recovery keeps exactly what committed. A failed
   * attempt (the file system may still be full) leaves the journal broken; the next transaction
   * tries again.
   */
  private void reconnect() throws SQLException {
    closeStatements();
    try {
      connection.close();
    } catch (SQLException ignored) {
      // The old connection's state is what is being discarded.
    }
    connection = connect(file);
    database = connection.unwrap(org.sqlite.SQLiteConnection.class).getDatabase();
    synchronousFull = true;
    broken = false;
  }

  private SQLException closeStatements() {
    SQLException failed = null;
    for (PreparedStatement p : statements.values()) {
      try {
        p.close();
      } catch (SQLException e) {
        failed = e;
      }
    }
    statements.clear();
    return failed;
  }

  @Override
  public long nextSequence(long principal, long first) throws SQLException {
    PreparedStatement p = prepared("SELECT next_sequence FROM principals WHERE principal = ?");
    p.setLong(1, principal);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? r.getLong(1) : first;
    }
  }

  @Override
  public void setNextSequence(long principal, long next) throws SQLException {
    if (update("UPDATE principals SET next_sequence = ? WHERE principal = ?", next, principal)
        == 0) {
      update("INSERT INTO principals (principal, next_sequence) VALUES (?, ?)", principal, next);
    }
  }

  @Override
  public Optional<Recorded> command(long principal, long sequence) throws SQLException {
    PreparedStatement p = prepared(JournalRows.SELECT_COMMAND);
    p.setLong(1, principal);
    p.setLong(2, sequence);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? Optional.of(JournalRows.recorded(r)) : Optional.empty();
    }
  }

  @Override
  public void recordCommand(long principal, long sequence, long namespace, byte[] sha256,
      byte[] outcome) throws SQLException {
    update(JournalRows.INSERT_COMMAND, principal, sequence, namespace, sha256, outcome);
  }

  @Override
  public void recordRefusal(long principal, long sequence, long namespace, byte[] sha256,
      byte[] outcome, long refusedMillis) throws SQLException {
    update(JournalRows.INSERT_REFUSAL, principal, sequence, namespace, sha256, outcome,
        refusedMillis);
  }

  @Override
  public Optional<Upload> upload(long principal, long namespace) throws SQLException {
    PreparedStatement p = prepared(JournalRows.SELECT_UPLOAD);
    p.setLong(1, principal);
    p.setLong(2, namespace);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? Optional.of(JournalRows.upload(r)) : Optional.empty();
    }
  }

  @Override
  public void beginUpload(long principal, long namespace, long declaredBytes, int parts,
      byte[] sha256, long begunMillis) throws SQLException {
    update(JournalRows.INSERT_UPLOAD, principal, namespace, declaredBytes, parts, sha256,
        UploadState.OPEN.name(), begunMillis);
  }

  @Override
  public void addPart(long principal, long namespace, int index, byte[] data) throws SQLException {
    update("INSERT INTO upload_parts (principal, namespace, part_index, data) VALUES (?, ?, ?, ?)",
        principal, namespace, index, data);
    update("UPDATE uploads SET received_parts = received_parts + 1,"
            + " received_bytes = received_bytes + ? WHERE principal = ? AND namespace = ?",
        (long) data.length, principal, namespace);
  }

  @Override
  public void setUploadState(long principal, long namespace, UploadState state)
      throws SQLException {
    update(JournalRows.SET_UPLOAD_STATE, state.name(), principal, namespace);
  }

  /** The upload's parts concatenated in index order. */
  @Override
  public byte[] assembled(long principal, long namespace) throws SQLException {
    PreparedStatement p = prepared(JournalRows.SELECT_PARTS);
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

  /** A fresh correlation: durable and monotonic (the counter commits with the query row). */
  @Override
  public long allocateCorrelation() throws SQLException {
    // One statement instead of a read and a write: the counter row exists after the first query.
    PreparedStatement p = prepared(
        "UPDATE counters SET value = value + 1 WHERE name = 'correlation' RETURNING value");
    try (ResultSet r = p.executeQuery()) {
      if (r.next()) {
        return r.getLong(1);
      }
    }
    update("INSERT INTO counters (name, value) VALUES ('correlation', 1)");
    return 1;
  }

  @Override
  public void insertAccepted(long correlation, long principal, long namespace, byte[] bundleSha256)
      throws SQLException {
    update("INSERT INTO queries (correlation, principal, namespace, bundle_sha256, state, code,"
            + " stage, message, total_rows, limit_amount, required_amount, failed_column,"
            + " released) VALUES (?, ?, ?, ?, ?, '', '', '', 0, 0, 0, '', 0)",
        correlation, principal, namespace, bundleSha256, QueryStatus.State.ACCEPTED.name());
  }

  /** Stores a terminal status (and, when it succeeded, the manifest), fenced by the attempt. */
  @Override
  public boolean finish(QueryStatus s, byte[] bundleSha256, byte[] manifest, long resultBytes,
      long finishedMillis, long attempt) throws SQLException {
    return update(JournalRows.FINISH, JournalRows.finishArgs(s, bundleSha256, manifest,
        resultBytes, finishedMillis, attempt, t -> t)) == 1;
  }

  @Override
  public OptionalLong claim(long correlation, long owner, String holder,
      long nowMillis, long untilMillis) throws SQLException {
    try (ResultSet r = bound(JournalRows.CLAIM, owner, holder, untilMillis, correlation,
        QueryStatus.State.ACCEPTED.name(), nowMillis, owner).executeQuery()) {
      return r.next() ? OptionalLong.of(r.getLong(1)) : OptionalLong.empty();
    }
  }

  @Override
  public boolean renew(long correlation, long owner, long attempt, long untilMillis)
      throws SQLException {
    return update(JournalRows.RENEW, untilMillis, correlation, QueryStatus.State.ACCEPTED.name(),
        attempt, owner) == 1;
  }

  /** One process writes this journal (the state directory's lock): its own wall clock. */
  @Override
  public long leaseClockMillis() {
    return System.currentTimeMillis();
  }

  @Override
  public List<Long> expiredLeases(long nowMillis, int limit) throws SQLException {
    List<Long> out = new ArrayList<>();
    PreparedStatement p = prepared(JournalRows.EXPIRED_LEASES);
    p.setString(1, QueryStatus.State.ACCEPTED.name());
    p.setLong(2, nowMillis);
    p.setInt(3, limit);
    try (ResultSet r = p.executeQuery()) {
      while (r.next()) {
        out.add(r.getLong(1));
      }
    }
    return out;
  }

  @Override
  public List<Retained> oldestRetained(int limit) throws SQLException {
    List<Retained> out = new ArrayList<>();
    PreparedStatement p = prepared("SELECT correlation, finished_ms, result_bytes FROM queries"
        + " WHERE state = ? AND released = 0 ORDER BY finished_ms, correlation LIMIT ?");
    p.setString(1, QueryStatus.State.SUCCEEDED.name());
    p.setInt(2, limit);
    try (ResultSet r = p.executeQuery()) {
      while (r.next()) {
        out.add(JournalRows.retained(r));
      }
    }
    return out;
  }

  @Override
  public long retainedBytes() throws SQLException {
    return retainedBytes(prepared(RETAINED_BYTES));
  }

  /** Any thread: {@link #retainedBytes} on the aside connection, not under this monitor. */
  @Override
  public long retainedBytesAside() throws SQLException {
    return aside(c -> {
      try (PreparedStatement p = c.prepareStatement(RETAINED_BYTES)) {
        return retainedBytes(p);
      }
    });
  }

  /** Any thread: {@link #liveManifests} on the aside connection, not under this monitor. */
  @Override
  public List<LiveManifest> liveManifestsAside(long after, int limit) throws SQLException {
    return aside(c -> {
      try (PreparedStatement p = c.prepareStatement(LIVE_MANIFESTS)) {
        return liveManifests(p, after, limit);
      }
    });
  }

  private interface AsideRead<T> {
    T read(Connection c) throws SQLException;
  }

  /**
   * Runs one read on the aside connection (opened at first use; a failure closes it, and the next
   * read opens a fresh one). Outside a transaction each statement reads its own WAL snapshot.
   */
  private <T> T aside(AsideRead<T> read) throws SQLException {
    synchronized (asideLock) {
      if (aside == null) {
        aside = sideConnection(file, "PRAGMA busy_timeout=10000", "PRAGMA query_only=1");
      }
      try {
        return read.read(aside);
      } catch (SQLException e) {
        closeAside();
        throw e;
      }
    }
  }

  /**
   * A further connection to the journal file {@code file} (the aside reads', the checkpointer's),
   * set up by {@code pragmas}; closed again when one fails.
   */
  static Connection sideConnection(Path file, String... pragmas) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
    try (Statement s = c.createStatement()) {
      for (String pragma : pragmas) {
        s.execute(pragma);
      }
    } catch (SQLException e) {
      c.close();
      throw e;
    }
    return c;
  }

  private static final String RETAINED_BYTES =
      "SELECT COALESCE(SUM(result_bytes), 0) FROM queries WHERE state = ? AND released = 0";

  private static long retainedBytes(PreparedStatement p) throws SQLException {
    p.setString(1, QueryStatus.State.SUCCEEDED.name());
    try (ResultSet r = p.executeQuery()) {
      r.next();
      return r.getLong(1);
    }
  }

  private void closeAside() {
    synchronized (asideLock) {
      if (aside != null) {
        try {
          aside.close();
        } catch (SQLException e) {
          log.debug("closing the journal's aside connection", e);
        }
        aside = null;
      }
    }
  }

  @Override
  public List<LiveManifest> liveManifests(long after, int limit) throws SQLException {
    return liveManifests(prepared(LIVE_MANIFESTS), after, limit);
  }

  private static final String LIVE_MANIFESTS = JournalRows.liveManifests("released = 0");

  private static List<LiveManifest> liveManifests(PreparedStatement p, long after, int limit)
      throws SQLException {
    p.setString(1, QueryStatus.State.SUCCEEDED.name());
    p.setLong(2, after);
    p.setInt(3, limit);
    try (ResultSet r = p.executeQuery()) {
      return JournalRows.liveManifests(r);
    }
  }

  /** Marks a result released and deletes its inline segments; true when it existed. */
  @Override
  public boolean release(long correlation) throws SQLException {
    update(JournalRows.DELETE_INLINE, correlation);
    return update("UPDATE queries SET released = 1 WHERE correlation = ?", correlation) == 1;
  }

  @Override
  public List<Finished> finishedBefore(long cutoffMillis, int limit) throws SQLException {
    return JournalRows.finishedBefore(limit, (state, released, rows) -> {
      try (ResultSet r = bound(JournalRows.FINISHED_BEFORE, state, released ? 1 : 0,
          cutoffMillis, rows).executeQuery()) {
        return JournalRows.finished(r);
      }
    });
  }

  @Override
  public void forget(Finished f) throws SQLException {
    JournalRows.forget(f, this::update);
  }

  @Override
  public void forgetCommand(long principal, long sequence) throws SQLException {
    update(JournalRows.DELETE_COMMAND, principal, sequence);
  }

  @Override
  public void forgetCommand(long principal, long sequence, long namespace) throws SQLException {
    update(JournalRows.DELETE_NAMED_COMMAND, principal, sequence, namespace);
  }

  @Override
  public List<Abandoned> abandonedBefore(long cutoffMillis, int limit) throws SQLException {
    try (ResultSet r = bound(JournalRows.ABANDONED_BEFORE, cutoffMillis,
        UploadState.SUBMITTED.name(), limit).executeQuery()) {
      return JournalRows.abandoned(r);
    }
  }

  /** Nothing to lock: this journal's transactions already run one at a time. */
  @Override
  public void lockPrincipal(long principal) {}

  @Override
  public void lockReleases() {}

  /** Nothing to take: as {@link #lockReleases}. */
  @Override
  public void shareReleases() {}

  @Override
  public void forgetUpload(long principal, long namespace) throws SQLException {
    JournalRows.forgetUpload(principal, namespace, this::update);
  }

  @Override
  public int forgetRefusedBefore(long cutoffMillis, int limit) throws SQLException {
    return update(FORGET_REFUSED, cutoffMillis, limit);
  }

  @Override
  public void storeInline(long correlation, int index, byte[] data) throws SQLException {
    update(JournalRows.INSERT_INLINE, correlation, index, data);
  }

  @Override
  public Optional<byte[]> inlineSegment(long correlation, int index) throws SQLException {
    PreparedStatement p = prepared(JournalRows.SELECT_INLINE);
    p.setLong(1, correlation);
    p.setInt(2, index);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? Optional.of(r.getBytes(1)) : Optional.empty();
    }
  }

  @Override
  public Optional<SavedQuery> query(long correlation) throws SQLException {
    PreparedStatement p = prepared(JournalRows.SELECT_QUERY);
    p.setLong(1, correlation);
    try (ResultSet r = p.executeQuery()) {
      return r.next()
          ? Optional.of(JournalRows.savedQuery(correlation, r, r.getInt(13) != 0))
          : Optional.empty();
    }
  }

  @Override
  public long rightsEpoch() throws SQLException {
    PreparedStatement p = prepared(JournalRows.RIGHTS_EPOCH);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? r.getLong(1) : 0;
    }
  }

  @Override
  public Optional<RightsVersion> rights() throws SQLException {
    PreparedStatement p = prepared(JournalRows.RIGHTS_CURRENT);
    try (ResultSet r = p.executeQuery()) {
      return r.next() ? Optional.of(JournalRows.rightsVersion(r)) : Optional.empty();
    }
  }

  /**
   * Takes SQLite's one write lock before it reads the head (a write that changes nothing, the
   * counterpart of PostgreSQL's row lock): a publish started after a read would find its snapshot
   * stale whenever another connection published meanwhile, and fail SQLITE_BUSY at once without
   * waiting, while a first statement that writes waits for the lock (busy_timeout) and then reads
   * what the other committed.
   */
  @Override
  public long publishRights(byte[] sha256, byte[] document) throws SQLException {
    update("UPDATE rights_head SET epoch = epoch WHERE id = 1");
    long epoch = 0;
    PreparedStatement p = prepared("SELECT epoch, content_sha256 FROM rights_head WHERE id = 1");
    try (ResultSet r = p.executeQuery()) {
      if (r.next()) {
        if (Arrays.equals(r.getBytes(2), sha256)) {
          return r.getLong(1);
        }
        epoch = r.getLong(1);
      }
    }
    long next = epoch + 1;
    update("INSERT INTO rights_versions (epoch, content_sha256, document) VALUES (?, ?, ?)",
        next, sha256, document);
    if (update("UPDATE rights_head SET epoch = ?, content_sha256 = ? WHERE id = 1", next, sha256)
        == 0) {
      update("INSERT INTO rights_head (id, epoch, content_sha256) VALUES (1, ?, ?)", next, sha256);
    }
    update(JournalRows.FORGET_RIGHTS, next - RIGHTS_VERSIONS_KEPT);
    return next;
  }

  private int update(String sql, Object... args) throws SQLException {
    return bound(sql, args).executeUpdate();
  }

  /** The cached statement for {@code sql} with {@code args} bound in order. */
  private PreparedStatement bound(String sql, Object... args) throws SQLException {
    PreparedStatement p = prepared(sql);
    for (int i = 0; i < args.length; i++) {
      p.setObject(i + 1, args[i]);
    }
    return p;
  }

  /** One daemon owns the state directory, hence this file (docs/configuration.md). */
  @Override
  public boolean soleWriter() {
    return true;
  }

  /** The cached statement for {@code sql}, prepared on first use; under this object's monitor. */
  private PreparedStatement prepared(String sql) throws SQLException {
    PreparedStatement p = statements.get(sql);
    if (p == null) {
      p = connection.prepareStatement(sql);
      statements.put(sql, p);
    }
    return p;
  }

  /**
   * SQLITE_FULL: SQLite could not write the transaction's pages (in WAL mode, its frames up to
   * the commit frame). A commit without its commit frame is not a commit — readers and recovery
   * ignore it — and the transaction is rolled back here, so nothing was recorded.
   */
  @Override
  public boolean isFullWithNothingRecorded(SQLException failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      // Primary result code 13 is SQLITE_FULL (extended codes keep it in the low byte).
      if (t instanceof SQLException e && (e.getErrorCode() & 0xff) == SQLITE_FULL) {
        return true;
      }
    }
    return false;
  }

  private static Object fileKey(Path file) throws IOException {
    return Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class)
        .fileKey();
  }

  private static Object fileKeyAtOpen(Path file) {
    try {
      return fileKey(file);
    } catch (IOException e) {
      return null; // not checked then
    }
  }

  /**
   * Whether the journal file is still the one this journal opened; when it was removed or
   * replaced, every later transaction fails unrecorded (journal_unavailable) instead of
   * committing into a file the next start would not find, and the log says so once. Called by
   * the retention sweep.
   */
  @Override
  public void checkFile() {
    if (lostFile != null || fileKey == null) {
      return;
    }
    Object now;
    try {
      now = fileKey(file);
    } catch (java.nio.file.NoSuchFileException gone) {
      now = null;
    } catch (IOException e) {
      // A failing stat (EIO, a brief chmod) says nothing about the file: the next sweep looks
      // again.
      log.warn("the journal file {} could not be checked: {}", file, e.toString());
      return;
    }
    if (!fileKey.equals(now)) {
      lostFile = "the journal file " + file + " was " + (now == null ? "removed" : "replaced")
          + " under the daemon: no more statements are recorded; stop the daemon and restore it";
      log.error("{} (what was recorded since it went is lost with it)", lostFile);
    }
  }

  @Override
  public boolean freeReserve() {
    return reserve.free();
  }

  @Override
  public void keepReserve() {
    reserve.refill();
  }

  @Override
  public long usableBytes() {
    try {
      return java.nio.file.Files.getFileStore(file).getUsableSpace();
    } catch (java.io.IOException e) {
      return -1;
    }
  }

  @Override
  public void observeCommits(LongConsumer observer) {
    this.commitObserver = observer;
  }

  @Override
  public synchronized void close() throws SQLException {
    closeAside();
    SQLException failed = closeStatements();
    try {
      checkpointer.close();
    } catch (SQLException e) {
      failed = failed != null ? failed : e;
    }
    connection.close(); // the last connection to close checkpoints and removes the WAL
    if (failed != null) {
      throw failed;
    }
  }
}
