package io.transit.flight.nativequery.embedded;

import io.transit.flight.cells.CellSegmentBuilder;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.OutputColumn;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.SafeText;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.duckdb.DuckDBResultSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one accepted query to its terminal status: rebuilds the plan from the journaled bundle,
 * runs the translated SQL on DuckDB, writes the retained segments and commits the manifest (or the
 * failure) to the journal. A small result's segments ({@link ResultWriter#INLINE_RESULT_BYTES})
 * commit inside the same durable transaction as the manifest and the terminal status; a larger
 * result's segment files are durable before the manifest naming them commits. Either way a crash
 * before that one commit leaves the query ACCEPTED and it simply runs again. The terminal status
 * is fenced by the run's lease attempt: if another replica claimed the query meanwhile, nothing
 * is published and the result is dropped (its segments are the same bytes the current attempt
 * writes, or unnamed files the retention sweep removes).
 *
 * <p>{@link #run} is called on an engine execution thread, one query per call, and so is {@link
 * #compute} by an early run ({@link EarlyRuns}) before its query exists; the runner itself is
 * shared and keeps no per-query state (each run borrows a DuckDB session from the shared pool and
 * gives it back). Each run owns a child allocator that must be empty when it ends; a {@link
 * Computed} result is immutable once returned, and leaves the thread that computed it only
 * through its {@link EarlyRuns.Early}'s monitor (a submit's sending thread that records it with
 * the acceptance, {@link #recordAccepted}).
 */
final class QueryRunner {
  static final String STAGE = "execution";
  private static final Logger log = LoggerFactory.getLogger(QueryRunner.class);
  private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger INT64_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  /**
   * An accepted query read for execution: its saved row and either its assembled bundle bytes or
   * the result an early run computed from the same bundle (see {@link EarlyRuns}).
   */
  private record Pending(JournalStore.SavedQuery saved, byte[] bundle, Computed early) {}

  /**
   * A bundle's result before any correlation names it: what execution produced (segments stored
   * or held inline) and what the manifest needs besides the query's identity. Computed by a run,
   * or by an early run before its query exists; never modified once returned.
   */
  record Computed(byte[] bundleSha256, RequestBundle bundle, List<QueryPlan.Output> outputs,
      List<SegmentRef> refs, List<byte[]> inline, long totalRows) {}

  private final JournalStore journal;
  private final DuckSessions sessions;
  private final DuckTables tables;
  private final SegmentStore segments;
  private final BufferAllocator allocator;
  private final Planner planner;
  private final int batchRows;
  private final BooleanSupplier stopping;
  private final Lock writing;
  private final long duckMemoryLimit;
  /** Results dropped because their attempt was fenced; any execution thread adds. */
  private final java.util.concurrent.atomic.AtomicLong fenced =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.function.LongPredicate beforeFinish;

  /**
   * What a computation asks its caller as it goes: an early run may be abandoned (checked between
   * exported batches) and may store segments only once its bundle is verified.
   */
  interface Control {
    /** True once the computation's work can only be dropped. */
    boolean abandoned();

    /** Blocks until the result may reach the store; throws {@link Abandoned} if it never may. */
    void beforeStoring();

    /**
     * Execution thread: {@code statement} is about to execute in DuckDB, until {@link
     * #executed}; an early run abandoned meanwhile cancels it there (an aggregate reads no batch
     * between which it could stop). Throws {@link Abandoned} when already abandoned.
     */
    default void executing(PreparedStatement statement) {}

    /**
     * Execution thread: the statement of {@link #executing} has ended; true when a cancel was
     * sent to it, so its session, which the cancel may still reach, is not used again.
     */
    default boolean executed() {
      return false;
    }
  }

  /** An early run stopped because its submit will not come; nothing of it is kept. */
  static final class Abandoned extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Abandoned() {
      super("the early run's submit will not come", null, false, false);
    }
  }

  /**
   * {@code beforeFinish} is told the correlation after execution, right before the terminal
   * commit (the test-only finish delay); false means the engine is closing and the query is left
   * ACCEPTED.
   */
  QueryRunner(JournalStore journal, DuckTables tables, DuckSessions sessions,
      SegmentStore segments, BufferAllocator allocator, Planner planner, int batchRows,
      BooleanSupplier stopping, Lock writing, long duckMemoryLimit,
      java.util.function.LongPredicate beforeFinish) {
    this.beforeFinish = beforeFinish;
    this.stopping = stopping;
    this.writing = writing;
    this.duckMemoryLimit = duckMemoryLimit;
    this.journal = journal;
    this.sessions = sessions;
    this.tables = tables;
    this.segments = segments;
    this.allocator = allocator;
    this.planner = planner;
    this.batchRows = batchRows;
  }

  /**
   * Runs the query under lease {@code attempt} and records its terminal status; returns it (null
   * if it was not pending, or if the attempt was fenced and the result dropped). {@code early} is
   * an early run's result (null: none); it is used only when the journaled query names the same
   * bundle digest, since a result is a function of the bundle over immutable publications. An
   * object store that cannot take the result's segments records nothing: the query stays ACCEPTED
   * and the caller runs it again, as when the journal cannot take the status.
   */
  QueryStatus run(long correlation, long attempt, Computed early)
      throws SQLException, SegmentStore.Unavailable {
    // One read transaction for the saved query and its bundle (nothing is written here).
    Pending pending = journal.transaction(() -> {
      JournalStore.SavedQuery q = journal.query(correlation)
          .orElseThrow(() -> new IllegalStateException("no query " + correlation));
      QueryStatus s = q.status();
      if (s.getState() != QueryStatus.State.ACCEPTED) {
        return null;
      }
      if (early != null && Arrays.equals(early.bundleSha256(), q.bundleSha256())) {
        return new Pending(q, null, early);
      }
      return new Pending(q, journal.assembled(s.getPrincipal(), s.getNamespace()), null);
    });
    if (pending == null) {
      return null;
    }
    // Taken at the first segment write and held until the manifest commits: the retention sweep
    // removes no file this run wrote, and a result small enough to stay inline (most) never
    // waits on a sweep at all.
    Storing storing = new Storing(writing);
    try {
      return runPending(correlation, attempt, pending, storing);
    } finally {
      storing.release();
    }
  }

  /**
   * A query's own run: never abandoned, takes the sweep's read side right before its first segment
   * goes to the store. One execution thread calls every method.
   */
  private static final class Storing implements Control {
    private final Lock writing;
    private boolean held; // the execution thread only

    Storing(Lock writing) {
      this.writing = writing;
    }

    @Override
    public boolean abandoned() {
      return false;
    }

    @Override
    public void beforeStoring() {
      writing.lock();
      held = true;
    }

    void release() {
      if (held) {
        held = false;
        writing.unlock();
      }
    }
  }

  private QueryStatus runPending(long correlation, long attempt, Pending pending, Control control)
      throws SQLException, SegmentStore.Unavailable {
    QueryStatus accepted = pending.saved().status();
    byte[] bundleSha256 = pending.saved().bundleSha256();
    QueryStatus.Builder done = accepted.toBuilder();
    Succeeded ok = null;
    try {
      Computed computed = pending.early() != null ? pending.early()
          : compute(bundleSha256, RequestBundle.parseFrom(pending.bundle()),
              "query-" + Long.toUnsignedString(correlation), control);
      ok = succeeded(correlation, accepted, computed);
    } catch (GatewayException e) {
      failed(done, e);
    } catch (InvalidProtocolBufferException e) {
      failed(done, QueryCode.INVALID_COMMAND.failure("the journaled bundle does not parse"));
    } catch (OutOfMemoryException e) {
      failed(done, QueryCode.BUDGET_EXHAUSTED.failure("execution memory was exhausted")
          .with("bound", "allocator_bytes")
          .with(Fact.unsigned("limit", allocator.getLimit())));
    } catch (SegmentStore.DiskFull e) {
      failed(done, diskFull(e));
    } catch (SegmentStore.Refused e) {
      // Unlike an outage, a refusal would meet every rerun: the statement fails, its sequence
      // spent, and the operator fixes the store's access (the log line says which refusal).
      log.warn("query {} failed: the segment store refused its segment ({})",
          Long.toUnsignedString(correlation), e.reason);
      failed(done, QueryCode.SEGMENT_STORE_UNAVAILABLE.failure(
          "the segment store refused the result's segment").with("reason", e.reason));
    } catch (SQLException | IOException | RuntimeException e) {
      if (outOfMemory(e) && !stopping.getAsBoolean()) {
        failed(done, outOfMemory());
        return finish(done.build(), bundleSha256, null, 0, List.of(), attempt);
      }
      if (invalidUtf8(e) && !stopping.getAsBoolean()) {
        // The published file's fault, not the engine's, and every run meets it again: recorded as
        // damaged data the operator must replace. DuckDB's text quotes the value: the log only.
        log.warn("query {} failed: a published file holds a UTF8 value that is not UTF-8 ({})",
            Long.toUnsignedString(correlation), e.getMessage());
        failed(done, QueryCode.EVIDENCE.failure(
            "a published file of the Table holds a UTF8 value that is not valid UTF-8"));
        return finish(done.build(), bundleSha256, null, 0, List.of(), attempt);
      }
      if (stopping.getAsBoolean()) {
        // The engine is closing under this query: leave it ACCEPTED so it resumes at next open.
        throw new IllegalStateException("engine closing", e);
      }
      if (e instanceof SegmentStore.Unavailable u) {
        // A store restart or outage is transient and execution deterministic: failing the
        // statement would spend its sequence for nothing, so it runs again once the store is back.
        throw u;
      }
      if (OpenFiles.exhausted(e)) {
        // DuckDB could not open the Table's file for want of a descriptor: as transient.
        throw new SegmentStore.Unavailable("open_files", e);
      }
      log.warn("query {} failed in execution", Long.toUnsignedString(correlation), e);
      // Recorded and replayed to every retry: a fixed text, the cause only in the log (until
      // 2026-12-07 the exception's class name, a library's internal, went to the caller).
      failed(done, QueryCode.INTERNAL.failure("execution failed; the gateway's log has the cause"
          + " (query " + Long.toUnsignedString(correlation) + ")"));
    }
    // Outside the try: a journal failure at the terminal commit is not the query's failure.
    return ok != null
        ? finish(ok.status(), bundleSha256, ok.manifest(), ok.resultBytes(), ok.inline(), attempt)
        : finish(done.build(), bundleSha256, null, 0, List.of(), attempt);
  }

  /**
   * A result as its terminal commit records it: the status, the manifest, the result's bytes and
   * its inline segments (only a succeeded result keeps segments).
   */
  private record Succeeded(QueryStatus status, byte[] manifest, long resultBytes,
      List<byte[]> inline) {}

  /** {@code computed} as query {@code correlation}'s success ({@code accepted}: its status). */
  private static Succeeded succeeded(long correlation, QueryStatus accepted, Computed computed) {
    ResultManifest manifest = manifest(correlation, accepted, computed);
    byte[] manifestBytes = DeterministicProto.bytes(manifest);
    long resultBytes = 0;
    for (SegmentRef ref : manifest.getSegmentsList()) {
      resultBytes += ref.getBytes();
    }
    QueryStatus status = accepted.toBuilder()
        .setState(QueryStatus.State.SUCCEEDED)
        .setManifestSha256(ByteString.copyFrom(Digests.sha256(manifestBytes)))
        .setTotalRows(manifest.getTotalRows())
        .build();
    return new Succeeded(status, manifestBytes, resultBytes, computed.inline());
  }

  /**
   * The query's one durable commit: inline segments, manifest and terminal status together, fenced
   * by {@code attempt} and by the bundle the run computed, {@code bundleSha256} (a fenced run
   * writes nothing: the inline rows are written only when the status is).
   */
  private QueryStatus finish(QueryStatus status, byte[] bundleSha256, byte[] manifest,
      long resultBytes, List<byte[]> inline, long attempt) throws SQLException {
    if (!beforeFinish.test(status.getCorrelation())) {
      throw new IllegalStateException("engine closing before the terminal commit");
    }
    long now = System.currentTimeMillis();
    boolean published = journal.transaction(
        () -> recordTerminal(status, bundleSha256, manifest, resultBytes, inline, attempt, now));
    if (!published) {
      fenced.incrementAndGet();
      log.warn("query {} attempt {}: fenced (another replica claimed or finished it), its {}"
              + " result is not published", Long.toUnsignedString(status.getCorrelation()),
          attempt, status.getState());
      return null;
    }
    return status;
  }

  /** The terminal rows, inside the caller's transaction; false (nothing written) when fenced. */
  private boolean recordTerminal(QueryStatus status, byte[] bundleSha256, byte[] manifest,
      long resultBytes, List<byte[]> inline, long attempt, long now) throws SQLException {
    if (!journal.finish(status, bundleSha256, manifest, resultBytes, now, attempt)) {
      return false;
    }
    for (int i = 0; i < inline.size(); i++) {
      journal.storeInline(status.getCorrelation(), i, inline.get(i));
    }
    return true;
  }

  /**
   * Whether {@code computed} reaches the store with nothing: all its segments (or none) are held
   * inline, so its terminal commit is journal rows alone.
   */
  static boolean wholeInline(Computed computed) {
    return computed.inline().size() == computed.refs().size();
  }

  /**
   * Inside the durable journal transaction that accepted query {@code correlation} and claimed
   * its lease {@code attempt} (its submit's): records {@code computed}, an early run's result for
   * the bundle the query names, as the query's terminal status, manifest and inline segments —
   * the rows its own run would commit later, so that one commit holds the acceptance and the
   * result. True when recorded; false, with nothing written, when the result is not {@link
   * #wholeInline}, is not for {@code bundleSha256}, or the query row is no longer ACCEPTED under
   * {@code attempt} (the terminal update is fenced by both).
   *
   * <p>The accepted row is not read back: the same transaction inserted it a moment ago, from the
   * submit's principal, namespace and bundle digest, with every other field at its default — which
   * is the status {@link #accepted} builds.
   */
  boolean recordAccepted(long correlation, long principal, long namespace, byte[] bundleSha256,
      long attempt, Computed computed) throws SQLException {
    if (!wholeInline(computed) || !Arrays.equals(computed.bundleSha256(), bundleSha256)) {
      return false;
    }
    Succeeded ok = succeeded(correlation, accepted(correlation, principal, namespace), computed);
    return recordTerminal(ok.status(), bundleSha256, ok.manifest(), ok.resultBytes(), ok.inline(),
        attempt, System.currentTimeMillis());
  }

  /** The status of a query row as {@link JournalStore#insertAccepted} writes it. */
  static QueryStatus accepted(long correlation, long principal, long namespace) {
    return QueryStatus.newBuilder()
        .setCorrelation(correlation)
        .setPrincipal(principal)
        .setNamespace(namespace)
        .setState(QueryStatus.State.ACCEPTED)
        .build();
  }

  /** Results dropped unpublished because their attempt was fenced, since open. */
  long fencedResults() {
    return fenced.get();
  }

  /** The segments' file system is full: the statement fails, nothing retained is touched. */
  static GatewayException diskFull(SegmentStore.DiskFull e) {
    return QueryCode.DISK_FULL.failure("the retained results' file system is full")
        .with("bound", "usable_disk_bytes")
        .with(Fact.unsigned("limit", e.usable))
        .with(Fact.unsigned("required", e.needed));
  }

  /**
   * DuckDB refused the query for memory ({@code engine.memory_limit_bytes}); its JDBC driver has
   * no error type, only the message's fixed "Out of Memory Error" prefix.
   */
  static boolean outOfMemory(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException && t.getMessage() != null
          && t.getMessage().contains("Out of Memory Error")) {
        return true;
      }
    }
    return false;
  }

  /**
   * DuckDB met a string that is not UTF-8 in a Parquet file's UTF8 column (a publication, or the
   * copy of an Arrow IPC one: DuckDB does not check Arrow strings). Its JDBC driver has no error
   * type, only the fixed text of its Parquet reader's error (DuckDB 1.4.4).
   */
  static boolean invalidUtf8(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException && t.getMessage() != null && t.getMessage().contains(
          "Invalid Input Error: Invalid string encoding found in Parquet file")) {
        return true;
      }
    }
    return false;
  }

  private GatewayException outOfMemory() {
    return QueryCode.BUDGET_EXHAUSTED.failure("the query needs more than the engine's memory limit")
        .with("bound", "memory_limit_bytes")
        .with(Fact.unsigned("limit", duckMemoryLimit));
  }

  private static void failed(QueryStatus.Builder done, GatewayException e) {
    done.setState(QueryStatus.State.FAILED)
        .setCode(e.code())
        .setStage(STAGE)
        .setMessage(e.getMessage() == null ? "" : e.getMessage())
        .setLimit(unsignedFact(e, "limit"))
        .setRequired(unsignedFact(e, "required"))
        .setColumn(factText(e, "column"))
        .setBound(factText(e, "bound"));
  }

  private static long unsignedFact(GatewayException e, String key) {
    String v = factText(e, key);
    return v.isEmpty() ? 0 : Long.parseUnsignedLong(v);
  }

  /** A fact's text: its value when it is a {@link Fact}, else its string form ("" if absent). */
  private static String factText(GatewayException e, String key) {
    Object v = e.facts().get(key);
    return v == null ? "" : v instanceof Fact f ? f.value() : v.toString();
  }

  /**
   * Plans and executes {@code bundle} on DuckDB and writes its segments: held inline when small,
   * else durable in the store. A failure is thrown as it happened ({@link #runPending} turns it into
   * a status). {@code control} may stop an early run whose submit will not come (an {@link
   * Abandoned} is thrown) and holds its first store write until its bundle is verified.
   *
   * <p>{@code control}'s {@link Control#beforeStoring} takes the sweep's writing lock before the
   * first segment reaches the store; the caller releases it once a manifest naming the segments
   * committed or the result was dropped.
   */
  Computed compute(byte[] bundleSha256, RequestBundle bundle, String allocatorName,
      Control control) throws SQLException, IOException {
    // The query may be older than the publication served now: one admitted before a republish
    // and resumed or taken over after it must not scan the new files under its old declaration.
    Optional<Publication> served = tables.publication(bundle.getTable().getObjectId());
    if (served.isEmpty() || !served.get().declaration().equals(bundle.getTable())) {
      throw QueryCode.SOURCE_UNAVAILABLE.failure(
          "the table is no longer published with the query's declaration");
    }
    String sql = bundle.getSql().toString(StandardCharsets.UTF_8);
    QueryPlan plan = planner.plan(sql, bundle.getTable());
    PlanTranslator.validate(plan, bundle.getTable());
    PlanTranslator.Translated duck =
        PlanTranslator.translate(plan, tables.scan(bundle.getTable().getObjectId()));
    List<String> names = plan.outputs().stream().map(QueryPlan.Output::name).toList();
    long objectId = bundle.getTable().getObjectId();
    // The Table is scanned in place: its files must still be the ones published, before the scan
    // and again after it (a file replaced mid-scan must not become a retained result).
    tables.checkUnchanged(objectId);
    List<SegmentRef> refs;
    List<byte[]> inline;
    long totalRows;
    DuckSessions.Session session = sessions.borrow();
    boolean clean = false;
    try (BufferAllocator child = allocator.newChildAllocator(
            allocatorName, 0, allocator.getLimit());
        ResultWriter writer =
            new ResultWriter(child, segments, names, bundle.getBudgets(),
                ResultWriter.INLINE_RESULT_BYTES, control::beforeStoring)) {
      PreparedStatement ps = session.prepared(duck.sql());
      duck.bind(ps);
      sessions.running(ps); // the engine's close may cancel it from here on
      boolean cancelSent = false;
      long maxRows = bundle.getBudgets().getMaxResultRows();
      Long overRows = null; // the result's rows, once known to exceed max_result_rows
      try {
        control.executing(ps); // and an abandoned early run's owner from here on
        boolean over = false;
        try (ResultSet rs = ps.executeQuery()) {
          if (plan.aggregate()) {
            aggregateRow(plan, rs, writer, maxRows);
          } else {
            over = projection(rs, child, writer, maxRows, control);
          }
        }
        if (over) {
          cancelSent = control.executed();
          overRows = countRows(session, duck, control);
        }
      } catch (SQLException e) {
        if (control.abandoned()) {
          throw new Abandoned(); // its cancel, not a failure of the bundle
        }
        // A file truncated, rewritten or removed under the scan fails DuckDB's read: that is the
        // source's change (query.source_changed, naming the file), not a defect of the gateway.
        tables.checkUnchanged(objectId);
        throw e;
      } finally {
        cancelSent |= control.executed();
        sessions.ended(ps);
      }
      clean = !cancelSent;
      tables.checkUnchanged(objectId);
      if (overRows != null) {
        throw ResultWriter.exhausted(
            "the result exceeds max_result_rows", "max_result_rows", maxRows, overRows);
      }
      refs = writer.finish();
      inline = writer.inline();
      totalRows = writer.totalRows();
    } finally {
      if (clean) {
        sessions.giveBack(session);
      } else {
        sessions.discard(session);
      }
    }
    return new Computed(bundleSha256, bundle, plan.outputs(), refs, inline, totalRows);
  }

  /** The manifest of {@code computed} as the result of query {@code q}. */
  private static ResultManifest manifest(long correlation, QueryStatus q, Computed computed) {
    RequestBundle bundle = computed.bundle();
    ResultManifest.Builder m = ResultManifest.newBuilder()
        .setVersion(1)
        .setCorrelation(correlation)
        .setPrincipal(q.getPrincipal())
        .setHasRole(bundle.getProof().getHasRole())
        .setRole(bundle.getProof().getRole())
        .setNamespace(q.getNamespace())
        .setBundleSha256(ByteString.copyFrom(computed.bundleSha256()))
        .setDeclarationSha256(
            ByteString.copyFrom(DeclarationFingerprint.of(bundle.getTable())))
        .setSource(bundle.getTable().getSource())
        .setResource(bundle.getTable().getObjectId())
        .setTotalRows(computed.totalRows())
        .addAllSegments(computed.refs());
    for (QueryPlan.Output o : computed.outputs()) {
      m.addColumns(OutputColumn.newBuilder().setName(o.name()).setNullable(o.nullable()));
    }
    return m.build();
  }

  private static void aggregateRow(QueryPlan plan, ResultSet rs, ResultWriter writer,
      long maxRows) throws SQLException, IOException {
    if (!rs.next()) {
      return; // LIMIT 0 over an aggregate
    }
    checkCountedCells(plan, rs);
    if (Long.compareUnsigned(1, maxRows) > 0) {
      throw ResultWriter.exhausted("the result exceeds max_result_rows", "max_result_rows", maxRows, 1);
    }
    CellSegmentBuilder segment = writer.segment(1);
    segment.reserve(1);
    for (int i = 0; i < plan.outputs().size(); i++) {
      QueryPlan.Output o = plan.outputs().get(i);
      Object v = rs.getObject(i + 1);
      if (v == null) {
        segment.set(i, CellState.CELL_NULL, 0L);
      } else if (o.kind() == QueryPlan.OutputKind.SUM) {
        BigInteger sum = v instanceof BigInteger b ? b : BigInteger.valueOf(((Number) v).longValue());
        if (sum.compareTo(INT64_MIN) < 0 || sum.compareTo(INT64_MAX) > 0) {
          throw QueryCode.ARITHMETIC_OVERFLOW.failure("SUM(" + o.column() + ") overflows int64")
              .with("column", o.name());
        }
        segment.set(i, CellState.CELL_INT64, sum.longValue());
      } else {
        // COUNT is unsigned natively; the adapter checks it against int64 at output.
        segment.set(i, CellState.CELL_UINT64, ((Number) v).longValue());
      }
    }
    writer.committed(1);
  }

  /**
   * A COUNT over a CELL_INT64 column that read a missing, conflicted or mistyped cell is refused
   * as the adapter refuses the cell itself (docs/queries.md "Types"): such a cell is neither a
   * value nor a null, so no count of it is the column's. The check columns follow the outputs
   * ({@link PlanTranslator#countedCells}). An aggregate has no result row to name.
   */
  private static void checkCountedCells(QueryPlan plan, ResultSet rs) throws SQLException {
    List<QueryPlan.Output> counted = PlanTranslator.countedCells(plan);
    for (int k = 0; k < counted.size(); k++) {
      Object v = rs.getObject(plan.outputs().size() + k + 1);
      if (v == null) {
        continue;
      }
      String column = counted.get(k).column();
      int state = ((Number) v).intValue();
      CellState s = CellState.forNumber(state);
      if (s == CellState.CELL_MISSING || s == CellState.CELL_CONFLICTED
          || s == CellState.CELL_MISTYPED) {
        throw QueryCode.CELL_STATE.failure("COUNT(" + SafeText.ident(column) + ") reads a cell"
                + " that is " + s.name())
            .with(SafeText.fact("column", column))
            .with(Fact.text("state", s.name()));
      }
      throw QueryCode.EVIDENCE.failure("COUNT(" + SafeText.ident(column) + ") reads a cell"
              + " of unknown state " + state)
          .with(SafeText.fact("column", column));
    }
  }

  /**
   * Copies the result's batches into segments; true, having stopped at once, when it passes
   * {@code maxRows} (the caller counts the whole result another way, without exporting it).
   */
  private boolean projection(ResultSet rs, BufferAllocator child, ResultWriter writer,
      long maxRows, Control control) throws SQLException, IOException {
    long seen = 0;
    try (ArrowReader reader =
        (ArrowReader) ((DuckDBResultSet) rs)
            .arrowExportStream(child, batchRows)) {
      VectorSchemaRoot batch = reader.getVectorSchemaRoot();
      while (reader.loadNextBatch()) {
        if (control.abandoned()) {
          throw new Abandoned();
        }
        if (sessions.cancelling()) {
          throw DuckSessions.cancelled(); // the engine's close stopped waiting for this run
        }
        int n = batch.getRowCount();
        seen += n;
        if (Long.compareUnsigned(seen, maxRows) > 0) {
          // Exporting the rest only to count it would be the whole scan's work for nothing.
          return true;
        }
        int done = 0;
        while (done < n) {
          int take = Math.min(n - done, writer.room());
          CellSegmentBuilder segment = writer.segment(take);
          segment.reserve(take);
          for (int c = 0; c < batch.getFieldVectors().size(); c++) {
            segment.copy(c, batch.getVector(c), done, take);
          }
          writer.committed(take);
          done += take;
        }
      }
    } catch (SegmentStore.DiskFull | SegmentStore.Unavailable | SegmentStore.Refused e) {
      // The store refused a segment written mid-export: its own failure, not the export's.
      throw e;
    } catch (IOException e) {
      throw new SQLException("Arrow export failed", e);
    }
    return false;
  }

  /**
   * The rows {@code duck}'s query returns, asked of DuckDB as a count: it reads only what the
   * query's filters need and exports no row, so a result far past {@code max_result_rows} costs
   * a scan, not the scan plus the export of every row (the failure still names the exact total).
   * Cancelled as the query's own statement is: by the engine's close, or an early run's abandon.
   */
  private long countRows(DuckSessions.Session session, PlanTranslator.Translated duck,
      Control control) throws SQLException {
    PreparedStatement count =
        session.prepared("SELECT count(*) FROM (" + duck.sql() + ") AS over_budget");
    duck.bind(count);
    sessions.running(count);
    try {
      control.executing(count);
      try (ResultSet rs = count.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } finally {
      sessions.ended(count);
    }
  }
}
