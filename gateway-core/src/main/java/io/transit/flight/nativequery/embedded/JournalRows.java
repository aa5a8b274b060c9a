package io.transit.flight.nativequery.embedded;

import com.google.protobuf.ByteString;
import io.transit.flight.proto.QueryStatus;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The row SQL and result-set mappings the two journals share ({@link SqliteJournal} and {@code
 * nativequery.postgres.PostgresJournal} keep the same tables): one text per statement both run
 * as it is, and one mapping per row shape, so the two cannot drift apart. Statements whose
 * dialects differ (booleans, upserts, {@code RETURNING}, row locks) stay in each journal.
 * Stateless; public only for the PostgreSQL journal's package.
 */
public final class JournalRows {
  private JournalRows() {}

  public static final String SELECT_COMMAND =
      "SELECT command_sha256, outcome FROM commands WHERE principal = ? AND sequence = ?";
  public static final String INSERT_COMMAND = "INSERT INTO commands (principal, sequence,"
      + " namespace, command_sha256, outcome) VALUES (?, ?, ?, ?, ?)";
  public static final String INSERT_REFUSAL = "INSERT INTO commands (principal, sequence,"
      + " namespace, command_sha256, outcome, refused_ms) VALUES (?, ?, ?, ?, ?, ?)";
  /**
   * A page of {@code forgetRefusedBefore}, from the index of refusals alone (refused_ms is none
   * in every other record): cutoff, limit. {@code %s} is what the page's read adds (the shared
   * journal's {@code FOR UPDATE SKIP LOCKED}).
   */
  public static final String FORGET_REFUSED = "DELETE FROM commands WHERE (principal, sequence)"
      + " IN (SELECT principal, sequence FROM commands WHERE refused_ms IS NOT NULL"
      + " AND refused_ms < ? ORDER BY refused_ms LIMIT ?%s)";
  public static final String SELECT_UPLOAD =
      "SELECT declared_bytes, part_count, bundle_sha256, received_parts, received_bytes, state"
          + " FROM uploads WHERE principal = ? AND namespace = ?";
  public static final String INSERT_UPLOAD =
      "INSERT INTO uploads (principal, namespace, declared_bytes, part_count, bundle_sha256,"
          + " received_parts, received_bytes, state, begun_ms) VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)";
  public static final String SET_UPLOAD_STATE =
      "UPDATE uploads SET state = ? WHERE principal = ? AND namespace = ?";
  public static final String SELECT_PARTS = "SELECT data FROM upload_parts"
      + " WHERE principal = ? AND namespace = ? ORDER BY part_index";
  /**
   * Fenced by the attempt and by the row's statement (principal, namespace and bundle digest):
   * parameters as {@link #finishArgs} lays them out. The attempt alone is no identity: a shared
   * journal's correlation sequence can hand a value out again after a database crash took back
   * the deferred submit that first drew it, and every first claim is attempt 1, so a run of the
   * lost statement would otherwise publish its result on another statement's query — another
   * principal's, or the same principal's at the same namespace with other SQL, if that caller
   * reused the namespace after the unknown outcome.
   */
  public static final String FINISH = "UPDATE queries SET state = ?, code = ?, stage = ?,"
      + " message = ?, manifest_sha256 = ?, total_rows = ?, limit_amount = ?,"
      + " required_amount = ?, failed_column = ?, failed_bound = ?, manifest = ?,"
      + " result_bytes = ?, finished_ms = ? WHERE correlation = ? AND state = ? AND attempt = ?"
      + " AND principal = ? AND namespace = ? AND bundle_sha256 = ?";
  /**
   * A lease claim, fenced by the row's own attempt (the UPDATE takes the row's write lock, so of
   * two concurrent claims the second sees the first's expiry and changes nothing); returns the new
   * attempt, no row when not claimed. Parameters: owner, holder, until, correlation, the ACCEPTED
   * state, now, owner.
   */
  public static final String CLAIM = "UPDATE queries SET lease_owner = ?, lease_holder = ?,"
      + " lease_until_ms = ?, attempt = attempt + 1 WHERE correlation = ? AND state = ?"
      + " AND (lease_until_ms <= ? OR lease_owner = ?) RETURNING attempt";
  public static final String RENEW = "UPDATE queries SET lease_until_ms = ? WHERE correlation = ?"
      + " AND state = ? AND attempt = ? AND lease_owner = ?";
  public static final String EXPIRED_LEASES = "SELECT correlation FROM queries WHERE state = ?"
      + " AND lease_until_ms <= ? ORDER BY correlation LIMIT ?";
  public static final String INSERT_INLINE =
      "INSERT INTO inline_segments (correlation, segment_index, data) VALUES (?, ?, ?)";
  public static final String SELECT_INLINE =
      "SELECT data FROM inline_segments WHERE correlation = ? AND segment_index = ?";
  public static final String DELETE_INLINE = "DELETE FROM inline_segments WHERE correlation = ?";
  /**
   * The retention sweep's live manifests leave out results held inline (of {@code queries q}):
   * a result is either all inline or all in the segment store, so theirs name no stored file, and
   * they are most of what a journal retains (skipping them skips reading and parsing their
   * manifests; the primary key answers the probe).
   */
  public static final String NOT_INLINE = "NOT EXISTS (SELECT 1 FROM inline_segments i"
      + " WHERE i.correlation = q.correlation)";
  /** What a publish deletes: the versions older than the kept ones (bound: the new epoch). */
  public static final String FORGET_RIGHTS = "DELETE FROM rights_versions WHERE epoch <= ?";

  /** A page of {@link JournalStore#liveManifests}; both journals' booleans compare with 0. */
  public static String liveManifests(String unreleased) {
    return "SELECT correlation, manifest FROM queries q WHERE state = ? AND " + unreleased
        + " AND manifest IS NOT NULL AND total_rows > 0 AND correlation > ? AND " + NOT_INLINE
        + " ORDER BY correlation LIMIT ?";
  }

  /** The rows of a {@link #liveManifests} page. */
  public static List<JournalStore.LiveManifest> liveManifests(ResultSet r) throws SQLException {
    List<JournalStore.LiveManifest> out = new ArrayList<>();
    while (r.next()) {
      out.add(new JournalStore.LiveManifest(r.getLong(1), r.getBytes(2)));
    }
    return out;
  }
  public static final String SELECT_QUERY =
      "SELECT principal, namespace, bundle_sha256, state, code, stage, message, manifest_sha256,"
          + " total_rows, limit_amount, required_amount, failed_column, released, manifest,"
          + " failed_bound FROM queries WHERE correlation = ?";
  /**
   * One range of the retention index a page of {@code finishedBefore} reads: state, released
   * (as each journal stores it), cutoff, limit. The ranges, in this order: released succeeded
   * results, then failed queries unreleased and released.
   */
  public static final String FINISHED_BEFORE = "SELECT correlation, principal, namespace"
      + " FROM queries WHERE state = ? AND released = ? AND finished_ms < ?"
      + " ORDER BY finished_ms, correlation LIMIT ?";
  public static final String DELETE_COMMAND =
      "DELETE FROM commands WHERE principal = ? AND sequence = ?";
  public static final String DELETE_NAMED_COMMAND =
      "DELETE FROM commands WHERE principal = ? AND sequence = ? AND namespace = ?";
  /**
   * A page of {@code abandonedBefore}, from the uploads' begin-time index: cutoff, the submitted
   * state, limit.
   */
  public static final String ABANDONED_BEFORE = "SELECT principal, namespace FROM uploads"
      + " WHERE begun_ms < ? AND state <> ? ORDER BY begun_ms, principal, namespace LIMIT ?";
  private static final String DELETE_QUERY = "DELETE FROM queries WHERE correlation = ?";
  private static final String DELETE_UPLOAD =
      "DELETE FROM uploads WHERE principal = ? AND namespace = ?";
  private static final String DELETE_PARTS =
      "DELETE FROM upload_parts WHERE principal = ? AND namespace = ?";
  public static final String RIGHTS_EPOCH = "SELECT epoch FROM rights_head WHERE id = 1";
  public static final String RIGHTS_CURRENT = "SELECT v.epoch, v.content_sha256, v.document"
      + " FROM rights_head h JOIN rights_versions v ON v.epoch = h.epoch WHERE h.id = 1";

  /** A row of {@link #SELECT_COMMAND}. */
  public static JournalStore.Recorded recorded(ResultSet r) throws SQLException {
    return new JournalStore.Recorded(r.getBytes(1), r.getBytes(2));
  }

  /** A row of {@link #SELECT_UPLOAD}. */
  public static JournalStore.Upload upload(ResultSet r) throws SQLException {
    return new JournalStore.Upload(r.getLong(1), r.getInt(2), r.getBytes(3), r.getInt(4),
        r.getLong(5), JournalStore.UploadState.valueOf(r.getString(6)));
  }

  /**
   * The parameters of {@link #FINISH}; {@code text} turns each text value into what the database
   * can store (PostgreSQL text holds no NUL).
   */
  public static Object[] finishArgs(QueryStatus s, byte[] bundleSha256, byte[] manifest,
      long resultBytes, long finishedMillis, long attempt,
      UnaryOperator<String> text) {
    return new Object[] {
      s.getState().name(), text.apply(s.getCode()), text.apply(s.getStage()),
      text.apply(s.getMessage()), manifest == null ? null : s.getManifestSha256().toByteArray(),
      s.getTotalRows(), s.getLimit(), s.getRequired(), text.apply(s.getColumn()),
      text.apply(s.getBound()), manifest, resultBytes, finishedMillis, s.getCorrelation(),
      QueryStatus.State.ACCEPTED.name(), attempt, s.getPrincipal(), s.getNamespace(),
      bundleSha256};
  }

  /**
   * A row of {@link #SELECT_QUERY} for {@code correlation}; {@code released} is read by the
   * caller (an integer in SQLite, a boolean in PostgreSQL).
   */
  public static JournalStore.SavedQuery savedQuery(long correlation, ResultSet r,
      boolean released) throws SQLException {
    QueryStatus.Builder s = QueryStatus.newBuilder()
        .setCorrelation(correlation)
        .setPrincipal(r.getLong(1))
        .setNamespace(r.getLong(2))
        .setState(QueryStatus.State.valueOf(r.getString(4)))
        .setCode(r.getString(5))
        .setStage(r.getString(6))
        .setMessage(r.getString(7))
        .setTotalRows(r.getLong(9))
        .setLimit(r.getLong(10))
        .setRequired(r.getLong(11))
        .setColumn(r.getString(12))
        .setBound(r.getString(15));
    byte[] manifestSha = r.getBytes(8);
    if (manifestSha != null) {
      s.setManifestSha256(ByteString.copyFrom(manifestSha));
    }
    return new JournalStore.SavedQuery(s.build(), r.getBytes(3), released, r.getBytes(14));
  }

  /** A row of a retained-results query: correlation, finish time, result bytes. */
  public static JournalStore.Retained retained(ResultSet r) throws SQLException {
    return new JournalStore.Retained(r.getLong(1), r.getLong(2), r.getLong(3));
  }

  /** The (state, released) ranges of {@link #FINISHED_BEFORE}, in the order they are read. */
  private static final QueryStatus.State[] FINISHED_STATES = {
    QueryStatus.State.SUCCEEDED, QueryStatus.State.FAILED, QueryStatus.State.FAILED};
  private static final boolean[] FINISHED_RELEASED = {true, false, true};

  /** Runs {@link #FINISHED_BEFORE} for one range and returns its result set's rows. */
  public interface FinishedRange {
    List<JournalStore.Finished> read(String state, boolean released, int limit)
        throws SQLException;
  }

  /**
   * {@link JournalStore#finishedBefore}: the ranges in order, through {@code range}, until
   * {@code limit} rows.
   */
  public static List<JournalStore.Finished> finishedBefore(int limit, FinishedRange range)
      throws SQLException {
    List<JournalStore.Finished> out = new ArrayList<>();
    for (int i = 0; i < FINISHED_STATES.length && out.size() < limit; i++) {
      out.addAll(range.read(FINISHED_STATES[i].name(), FINISHED_RELEASED[i], limit - out.size()));
    }
    return out;
  }

  /** The rows of a {@link #FINISHED_BEFORE} result set: correlation, principal, namespace. */
  public static List<JournalStore.Finished> finished(ResultSet r) throws SQLException {
    List<JournalStore.Finished> out = new ArrayList<>();
    while (r.next()) {
      out.add(new JournalStore.Finished(r.getLong(1), r.getLong(2), r.getLong(3)));
    }
    return out;
  }

  /** Runs one write of the caller's journal in its current transaction. */
  public interface Write {
    void run(String sql, Object... args) throws SQLException;
  }

  /**
   * {@link JournalStore#forget}: the query row and its inline segments, the upload and its
   * parts, through {@code write}.
   */
  public static void forget(JournalStore.Finished f, Write write) throws SQLException {
    write.run(DELETE_INLINE, f.correlation());
    write.run(DELETE_QUERY, f.correlation());
    forgetUpload(f.principal(), f.namespace(), write);
  }

  /** {@link JournalStore#forgetUpload}: the upload's parts and its row, through {@code write}. */
  public static void forgetUpload(long principal, long namespace, Write write)
      throws SQLException {
    write.run(DELETE_PARTS, principal, namespace);
    write.run(DELETE_UPLOAD, principal, namespace);
  }

  /** The rows of an {@link #ABANDONED_BEFORE} result set: principal, namespace. */
  public static List<JournalStore.Abandoned> abandoned(ResultSet r) throws SQLException {
    List<JournalStore.Abandoned> out = new ArrayList<>();
    while (r.next()) {
      out.add(new JournalStore.Abandoned(r.getLong(1), r.getLong(2)));
    }
    return out;
  }

  /** A row of {@link #RIGHTS_CURRENT}. */
  public static JournalStore.RightsVersion rightsVersion(ResultSet r) throws SQLException {
    return new JournalStore.RightsVersion(r.getLong(1), r.getBytes(2), r.getBytes(3));
  }
}
