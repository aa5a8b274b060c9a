package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryAdmin;
import io.transit.flight.nativequery.EngineIdentity;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.threads.LastIdlePool;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded native query system: journal (SQLite, or the shared PostgreSQL journal), published Tables scanned in place and
 * execution (DuckDB),
 * retained results (content-addressed segment files) behind {@link NativeQueryClient}.
 *
 * <p>Threads: {@link #send}, the readers, {@link #awaitQuery}, {@link #release} and {@link
 * #updateRights} may be called from any thread (gRPC service threads, T_caller workers). Accepted
 * queries run on the engine's own bounded pool ({@code executionThreads}), each under an
 * execution lease ({@link Leases}: claimed with its acceptance, renewed on {@code
 * native-lease-renew} and taken over on {@code native-lease-scan}); a finished query wakes every
 * {@link #awaitQuery} waiter through {@code completions}, and waiters also poll the journal every
 * {@value #AWAIT_POLL_MS} ms for queries another replica finished. {@link #close()} is called once
 * by the owner after callers stop; it stops the lease threads, waits {@code shutdownWait} for
 * running queries and gives up the leases of unfinished ones (they stay ACCEPTED in the journal and are taken over by the next
 * scan of any engine on the same journal). The retention policy runs on one {@code
 * native-retention} thread ({@link Retention}).
 * {@link #expect} starts the signature checks of a chain's later commands, and a seal its bundle's
 * proof verification, on the engine's {@code native-verify-N} helpers ({@link SignatureVerdicts}); the
 * sending thread of each command takes its verdict. The announcement (or, without one, the seal)
 * also starts an early run of its bundle on an execution thread ({@link EarlyRuns}; at most
 * {@code executionThreads - 1} at once), whose result the submit's query takes over when it is
 * accepted.
 */
public final class EmbeddedEngine implements NativeQueryClient, NativeQueryAdmin {
  /**
   * The page size of a new journal ({@code journal.sqlite}); public for tools that time the
   * journal's commit alone (the benchmarks' MandatedWork).
   */
  public static final int NEW_JOURNAL_PAGE_BYTES = SqliteJournal.PAGE_BYTES;

  /** This engine's identity: its name and the gateway-core build it runs as. */
  public static final EngineIdentity IDENTITY = EngineIdentity.ofBuild(
      "transit-embedded", EmbeddedEngine.class, "io.transit.flight", "gateway-core");

  private static final Logger log = LoggerFactory.getLogger(EmbeddedEngine.class);

  private final EngineOptions options;
  private final JournalStore journal;
  private final DuckTables tables;
  private final RightsRegistry rights;
  private final RequesterCheck requester;
  private final CommandProcessor commands;
  private final ResultReader reader;
  private final QueryRunner runner;
  private final DuckSessions sessions;
  private final BufferAllocator allocator;
  private final Planner planner;
  private final ExecutorService executor;
  private final Retention retention;
  private final SegmentStore segments;
  private final Leases leases;
  private final JournalRights rightsLedger;
  // One limiter of the journal-failure log lines for this engine's journal (any thread).
  private final JournalUnavailable unavailable;
  private final EarlyRuns earlyRuns;
  /** Early runs whose result became their query's (metrics, tests). */
  private final java.util.concurrent.atomic.AtomicLong earlyAdopted =
      new java.util.concurrent.atomic.AtomicLong();
  /** Of those, results committed with their submit (finishedWithTheSubmit); any sending thread. */
  private final java.util.concurrent.atomic.AtomicLong earlyWithSubmit =
      new java.util.concurrent.atomic.AtomicLong();
  /**
   * How long an early run waits, after executing, for its submit: the gateway sends the submit as
   * soon as the seal's outcome returns, so a longer wait means the chain stopped (its query, if it
   * comes later, runs the usual way).
   */
  static final long EARLY_WAIT_MS = 1_000;
  /**
   * How long an accepted submit's sending thread waits for its early run, still computing, to
   * finish, so that the result commits with the acceptance: the query's completion waits for that
   * run either way, so the wait costs nothing unless the run ends past it (then the query is
   * handed to the run the usual way), and it is short against any caller's deadline.
   */
  static final long EARLY_RESULT_WAIT_MS = 10;
  /**
   * Longest wait of {@link #awaitQuery} between journal reads: a query finished by another
   * replica on a shared journal wakes no local monitor.
   */
  static final long AWAIT_POLL_MS = 50;
  /**
   * How long {@link #awaitQuery} waits on a running query before asking the segment store whether
   * it answers (and again after each such interval): a query held for a store that is down
   * answers UNAVAILABLE, not its caller's deadline.
   */
  static final long AWAIT_STORE_PROBE_MS = 1_000;
  /** Pauses between runs of a query whose terminal status the journal refused. */
  private static final long RERUN_FIRST_PAUSE_MS = 200;
  private static final long RERUN_MAX_PAUSE_MS = 5_000;
  /** How often close asks the statements still in DuckDB to stop, once its drain has waited. */
  private static final long CANCEL_SLICE_MS = 50;
  /**
   * SQLite's default page size, the larger of the two a journal has (a new one has {@link
   * #NEW_JOURNAL_PAGE_BYTES}): a refused journal write needed at least one page more.
   */
  private static final long JOURNAL_PAGE_BYTES = 4096;

  private final SignaturePool verifiers;
  private final Object completions = new Object();
  // @GuardedBy("completions"): bumped after every terminal status commit.
  private long completed;
  private volatile boolean closing;

  private EmbeddedEngine(EngineOptions options, JournalStore journal, DuckTables tables,
      RightsRegistry rights, SegmentStore segments, BufferAllocator allocator, Planner planner) {
    this.options = options;
    this.journal = journal;
    this.tables = tables;
    this.rights = rights;
    this.allocator = allocator;
    this.planner = planner;
    this.segments = segments;
    this.unavailable = new JournalUnavailable();
    this.rightsLedger = new JournalRights(journal, unavailable);
    this.requester = new RequesterCheck(rights, tables);
    // Command and proof verifications start ahead on helpers (SignatureVerdicts); the engine owns
    // the pool.
    this.verifiers = SignaturePool.forProcessors("native-verify");
    SignatureVerdicts verdicts = new SignatureVerdicts(verifiers);
    UploadValidator uploads = new UploadValidator(journal, rights, requester, planner, options,
        verdicts, System::currentTimeMillis);
    // Queued queries hold leases too: a scan claims no more than a few per execution thread.
    this.leases = new Leases(journal, options.lease(), () -> options.faults().renewLeases(),
        4 * options.executionThreads());
    this.commands = new CommandProcessor(journal, rights, uploads, verdicts,
        options.firstSequence(),
        options.deferExecution() ? CommandProcessor.Claimer.NONE : leases::claimAccepted,
        options.deferExecution() ? CommandProcessor.Finisher.NONE : new EarlyFinisher(),
        System::currentTimeMillis);
    this.reader = new ResultReader(journal, rights, segments, unavailable);
    this.sessions = new DuckSessions(tables);
    this.retention = new Retention(journal, segments, options.retention(),
        System::currentTimeMillis, java.time.Duration.ofSeconds(2));
    this.runner = new QueryRunner(journal, tables, sessions, retention.watching(segments),
        allocator, planner, options.exportBatchRows(), () -> closing, retention.writing(),
        options.duck().memoryLimitBytes(), correlation -> {
          long hold = options.faults().finishDelayMillis();
          if (hold == 0) {
            return true;
          }
          // The kill -9 harness waits for this line to kill inside the window.
          log.warn("query {} executed; its terminal commit is held {} ms (test fault)",
              Long.toUnsignedString(correlation), hold);
          return holdBack(hold);
        });
    // One execution thread always stays for queries that were not run early (takeovers, resumed
    // queries, a second caller's), so a pool of one runs nothing early.
    this.earlyRuns = new EarlyRuns(options.executionThreads() - 1);
    this.executor = LastIdlePool.create("native-exec", options.executionThreads());
  }

  /**
   * Opens (or creates) the engine's state under {@code stateDir}, publishes the Tables as DuckDB
   * scans of their files (reading only footers: see {@link DuckTables}) and, unless execution
   * is deferred, takes over accepted-but-unfinished queries whose lease lapsed (a graceful close
   * gives its leases up; a killed process's expire after {@code engine.lease_ms}).
   *
   * @throws IllegalArgumentException when a publication does not match its declaration
   */
  public static EmbeddedEngine open(Path stateDir, EngineOptions options,
      List<Publication> publications, Collection<PrincipalRights> rights, Planner planner)
      throws IOException, SQLException {
    PrivateFiles.directories(stateDir);
    return open(stateDir, options, SqliteJournal.open(stateDir.resolve(SqliteJournal.FILE)),
        publications, rights, planner);
  }

  /**
   * As {@link #open(Path, EngineOptions, List, Collection, Planner)} with the journal given (the
   * shared PostgreSQL journal of a replicated deployment). Ownership of {@code journal} passes to
   * the engine: {@link #close()} closes it, and so does a failed open.
   */
  public static EmbeddedEngine open(Path stateDir, EngineOptions options, JournalStore journal,
      List<Publication> publications, Collection<PrincipalRights> rights, Planner planner)
      throws IOException, SQLException {
    BufferAllocator allocator = null;
    DuckTables tables = null;
    SegmentStore segments = null;
    try {
      PrivateFiles.directories(stateDir);
      if (options.recipient() == 0) {
        log.warn("no proof recipient configured: principal proofs are accepted for any service id");
      }
      RightsRegistry registry = new RightsRegistry(rights);
      allocator = new RootAllocator(options.memoryLimitBytes());
      tables = DuckTables.open(publications, options.duck(), stateDir, allocator);
      segments = options.segments() instanceof SegmentSettings.ObjectStore s
          ? S3SegmentStore.open(s)
          : new LocalSegmentStore(stateDir.resolve("segments"));
      EmbeddedEngine engine =
          new EmbeddedEngine(options, journal, tables, registry, segments, allocator, planner);
      if (!options.deferExecution()) {
        engine.leases.start(engine::start);
      }
      engine.retention.start();
      return engine;
    } catch (IOException | SQLException | RuntimeException e) {
      if (segments != null) {
        segments.close();
      }
      if (tables != null) {
        tables.close();
      }
      journal.close();
      if (allocator != null) {
        allocator.close();
      }
      throw e;
    }
  }

  /**
   * Starts verifying every command after the first on the signature helpers, when they are free:
   * the first is verified at once by its own send, and while it and the next ones are decided and
   * committed the helpers check the rest. Each send still verifies (taking the verdict) and
   * decides its command alone.
   */
  @Override
  public void expect(List<SignedCommand> chain) {
    for (int i = 1; i < chain.size(); i++) {
      commands.prefetch(chain.get(i));
    }
    EarlyRuns.announced(chain).ifPresent(
        a -> startEarly(a.principal(), a.namespace(), a.bundle(), a.bundleSha256(), false));
  }

  /**
   * Starts the announced bundle's early run on an execution thread, while the gateway signs its
   * chain: on two processors the run then overlaps the signing instead of following it
   * (docs/performance.md, thirteenth round). Its chain's {@link #expect} finds the run going.
   */
  @Override
  public void announce(long principal, long namespace, byte[] bundle) {
    startEarly(principal, namespace, bundle, Digests.sha256(bundle), false);
  }

  /** The announced bundle's early run stops (its DuckDB statement cancelled) unless handed off. */
  @Override
  public void withdraw(long principal, long namespace) {
    earlyRuns.abandon(principal, namespace);
  }

  @Override
  public Decided decide(SignedCommand command) {
    NativeCommand parsed = CommandProcessor.parse(command);
    try {
      commands.authenticate(command, parsed);
    } catch (RuntimeException e) {
      // Refused before its record (a key rotated, the send right revoked): no query comes.
      earlyRuns.abandon(parsed.getPrincipal(), parsed.getNamespace());
      throw e;
    }
    if (options.faults().fail(CommandFaults.Point.BEFORE_RECORD, parsed)) {
      throw unknownOutcome(parsed, "injected before the record");
    }
    if (parsed.getBodyCase() == NativeCommand.BodyCase.SUBMIT
        && options.faults().submitDelayMillis() != 0) {
      // The kill -9 harness waits for this line to kill while the early run has the result and
      // nothing of the submit is recorded.
      log.warn("submit at sequence {} held {} ms before its record (test fault)",
          Long.toUnsignedString(parsed.getSequence()), options.faults().submitDelayMillis());
      holdBack(options.faults().submitDelayMillis());
    }
    CommandProcessor.Result result;
    try {
      result = commands.decide(command, parsed);
    } catch (SQLException | RuntimeException e) {
      earlyRuns.abandon(parsed.getPrincipal(), parsed.getNamespace());
      throw decisionFailure(parsed, e);
    }
    if (result.sealedBundle() != null) {
      // The seal was accepted only if its digest is the assembled bundle's: no need to hash again.
      startEarly(parsed.getPrincipal(), parsed.getNamespace(), result.sealedBundle(),
          parsed.getSeal().getBundleSha256().toByteArray(), true);
    }
    if (result.finished()) {
      // Its result is recorded: the early run ends without running the query.
      earlyRuns.abandon(parsed.getPrincipal(), parsed.getNamespace());
      finishedWithTheSubmit(result.startCorrelation());
    } else if (result.startAttempt() != 0) {
      start(result.startCorrelation(), result.startAttempt(), parsed);
    } else if (result.outcome().getKind() != CommandOutcome.Kind.ACCEPTED
        || parsed.getBodyCase() == NativeCommand.BodyCase.SUBMIT) {
      // Rejected, or a submit replayed or deferred: no new query takes the early run's result.
      earlyRuns.abandon(parsed.getPrincipal(), parsed.getNamespace());
    }
    if (options.faults().fail(CommandFaults.Point.AFTER_RECORD, parsed)) {
      throw unknownOutcome(parsed, "injected after the record");
    }
    return new Decided(result.outcome(), result.replayed());
  }

  /**
   * Records an early run's result with its submit's acceptance (docs/native-engine.md, "Early
   * runs"): both methods run on the submit's sending thread, {@code ready} before its transaction
   * and {@code finish} inside it; {@link #send} ends the run after the commit.
   */
  private final class EarlyFinisher implements CommandProcessor.Finisher {
    @Override
    public boolean ready(NativeCommand submit) {
      QueryRunner.Computed c = earlyRuns.ready(submit.getPrincipal(), submit.getNamespace(),
          submit.getSubmit().getBundleSha256().toByteArray(),
          TimeUnit.MILLISECONDS.toNanos(EARLY_RESULT_WAIT_MS));
      if (c == null || !QueryRunner.wholeInline(c)) {
        return false;
      }
      long hold = options.faults().finishDelayMillis();
      if (hold != 0) {
        // The kill -9 harness waits for this line to kill inside the window: executed, nothing
        // of the submit recorded, its one commit (acceptance and result) about to be made.
        log.warn("submit at sequence {} executed early; its terminal commit is held {} ms (test"
            + " fault)", Long.toUnsignedString(submit.getSequence()), hold);
        return holdBack(hold);
      }
      return true;
    }

    @Override
    public boolean finish(NativeCommand submit, long correlation, long attempt)
        throws SQLException {
      // Read, not taken: this work may run again (a journal retry); the run ends after the commit.
      byte[] bundleSha256 = submit.getSubmit().getBundleSha256().toByteArray();
      QueryRunner.Computed c =
          earlyRuns.ready(submit.getPrincipal(), submit.getNamespace(), bundleSha256, 0);
      return c != null && runner.recordAccepted(correlation, submit.getPrincipal(),
          submit.getNamespace(), bundleSha256, attempt, c);
    }
  }

  /** Sending thread: query {@code correlation} was accepted and finished in one commit. */
  private void finishedWithTheSubmit(long correlation) {
    earlyWithSubmit.incrementAndGet();
    earlyAdopted.incrementAndGet();
    if (options.faults().releaseAfterExecution()) {
      release(correlation); // test-only, as runOne: before waiters wake
    }
    synchronized (completions) {
      completed++;
      completions.notifyAll();
    }
  }

  /** What the caller learns of a decision that threw: nothing recorded, or an unknown outcome. */
  private GatewayException decisionFailure(NativeCommand parsed, Exception failure) {
    if (failure instanceof GatewayException g) {
      return g;
    }
    if (!(failure instanceof SQLException e)) {
      // A defect (e.g. in the planner): the transaction rolled back, nothing was recorded.
      log.error("command at sequence {} failed", Long.toUnsignedString(parsed.getSequence()),
          failure);
      return QueryCode.INTERNAL.failure("the native command could not be decided", failure);
    }
    if (e instanceof CommandProcessor.NotDurable) {
      // Checked first: its cause may be the full disk or the lost connection of the flush, which
      // would otherwise read as a commit that recorded nothing.
      log.warn("command at sequence {}: its decision committed but could not be made durable",
          Long.toUnsignedString(parsed.getSequence()), e);
      return sqlFacts(unknownOutcome(parsed, "the decision could not be made durable"), e);
    }
    if (journal.isFullWithNothingRecorded(e)) {
      return journalFull(parsed);
    }
    if (e instanceof JournalStore.NotCommitted) {
      // Rolled back before the commit was sent: nothing is recorded, a retry is safe. The
      // SQLState (e.g. 55P03 lock timeout, 08006 connection lost) says why in a bounded fact.
      log.warn("command at sequence {} not recorded: {}",
          Long.toUnsignedString(parsed.getSequence()), e.getMessage(), e);
      GatewayException g = new GatewayException(Cause.TRANSPORT, "query.journal_unavailable",
              "the native journal cannot be written; nothing was recorded", e)
          .with(Fact.unsigned("sequence", parsed.getSequence()))
          .with(Fact.unsigned("namespace", parsed.getNamespace()));
      return sqlFacts(g, e);
    }
    // Any other failed commit may or may not have reached the disk: the outcome is unknown.
    log.warn("command at sequence {}: its journal commit failed, outcome unknown",
        Long.toUnsignedString(parsed.getSequence()), e);
    return sqlFacts(unknownOutcome(parsed, "the journal commit failed"), e);
  }

  /**
   * {@code g} with what {@code e} says about its cause in bounded facts a client may see: the
   * SQLSTATE ({@code sql_state}) and the driver's vendor code ({@code vendor_code}; SQLite's
   * result code, which its SQLExceptions carry instead of a SQLSTATE), the first of each along
   * the cause chain. Never the exception's text: it can hold SQL, paths and server internals, and
   * the log has it.
   */
  static GatewayException sqlFacts(GatewayException g, SQLException e) {
    String state = null;
    int vendor = 0;
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof SQLException s) {
        if (state == null && s.getSQLState() != null && SQL_STATE.matcher(s.getSQLState())
            .matches()) {
          state = s.getSQLState();
        }
        if (vendor == 0) {
          vendor = s.getErrorCode();
        }
      }
    }
    GatewayException out = state == null ? g : g.with("sql_state", state);
    return vendor == 0 ? out : out.with(Fact.signed("vendor_code", vendor));
  }

  /** A SQLSTATE as the standard writes it: five digits or upper-case letters. */
  private static final java.util.regex.Pattern SQL_STATE =
      java.util.regex.Pattern.compile("[0-9A-Z]{5}");

  /**
   * The journal's storage is full and the store guarantees the transaction rolled back: nothing
   * of the command exists, so this is not a terminal failure of an accepted query, and the same
   * sequence and SQL complete the statement once there is room.
   */
  private GatewayException journalFull(NativeCommand parsed) {
    GatewayException g = QueryCode.DISK_FULL.failure(
            "the journal's storage is full: the command was not recorded")
        .with(Fact.unsigned("sequence", parsed.getSequence()))
        .withOutcome(Outcome.NOT_ADMITTED)
        .withActions(Action.RETRY_SAME_SEQUENCE_AND_SQL);
    long usable = journal.usableBytes();
    if (usable >= 0) {
      // At least one more journal page than the file system had left.
      g = g.with(Fact.unsigned("limit", usable))
          .with(Fact.unsigned("required", usable + JOURNAL_PAGE_BYTES));
    }
    return g;
  }

  private static GatewayException unknownOutcome(NativeCommand c, String why) {
    return GatewayException.of(Cause.UNKNOWN_OUTCOME, "query.unknown_outcome",
            "the native command's outcome is unknown: " + why)
        .with(Fact.unsigned("sequence", c.getSequence()))
        .with(Fact.unsigned("namespace", c.getNamespace()));
  }

  /**
   * Sending thread, at a chain's announcement ({@code verified} false) or after its seal
   * committed (true): runs the bundle early when a permit is free and nothing pins execution
   * timing (deferred execution, the test-only execution delay), or verifies the early run
   * already going.
   */
  private void startEarly(long principal, long namespace, byte[] bundle, byte[] sha,
      boolean verified) {
    if (options.deferExecution() || !options.faults().runsEarly()) {
      return;
    }
    earlyRuns.offer(principal, namespace, bundle, sha, verified).ifPresent(e -> {
      try {
        executor.execute(() -> runEarly(e));
      } catch (RejectedExecutionException closed) {
        earlyRuns.finished(e);
      }
    });
  }

  /**
   * An execution thread: executes an early run's bundle, then waits for its submit and runs the
   * handed-off query with that result. The retention sweep's writing lock (its read side) is held
   * from the first segment write (none for a result small enough to stay in memory) until the
   * query's first run, the only one that may adopt the result, ended — through the wait for the
   * submit (at most {@link #EARLY_WAIT_MS}), since the files may yet be named by its manifest — or
   * at once when the run computed nothing to adopt.
   */
  private void runEarly(EarlyRuns.Early early) {
    java.util.concurrent.locks.Lock writing = retention.writing();
    boolean[] locked = {false}; // this execution thread only
    QueryRunner.Control control = new QueryRunner.Control() {
      @Override
      public boolean abandoned() {
        return early.abandoned();
      }

      @Override
      public void beforeStoring() {
        early.beforeStoring(); // outside the lock: it waits for the bundle's verification
        writing.lock();
        locked[0] = true;
      }

      @Override
      public void executing(java.sql.PreparedStatement statement) {
        early.executing(statement);
      }

      @Override
      public boolean executed() {
        return early.executed();
      }
    };
    try {
      QueryRunner.Computed computed = null;
      try {
        computed = runner.compute(early.bundleSha256,
            io.transit.flight.proto.RequestBundle.parseFrom(early.bundle),
            "early-" + Long.toUnsignedString(early.namespace), control);
      } catch (QueryRunner.Abandoned e) {
        // Dropped; a query handed off before the run gave up still runs, the usual way, below.
        computed = null;
      } catch (Exception | Error e) {
        // Any failure (a budget, DuckDB, the store) is left to the query's own run, which
        // reaches the same deterministic failure or retries a transient one as it always does.
        // An Error too: past this point a query handed off to this run is run below; had the
        // Error ended the thread, that query would stay ACCEPTED under a lease renewed for good.
        log.debug("early run of namespace {} left to the query's run",
            Long.toUnsignedString(early.namespace), e);
      }
      if (computed == null && locked[0]) {
        // Nothing to adopt: what it stored is unreferenced, and a handed-off query stores again
        // under its own hold.
        locked[0] = false;
        writing.unlock();
      }
      early.computed(computed); // a submit that comes now records it in its own commit
      EarlyRuns.HandOff h = early.await(EARLY_WAIT_MS, () -> closing);
      if (h != null) {
        // Its files stay protected while the first run may still adopt them; a rerun after that
        // computes and stores again under a hold of its own, so none is kept through its pauses.
        runOne(h.correlation(), h.attempt(), computed, () -> {
          if (locked[0]) {
            locked[0] = false;
            writing.unlock();
          }
        });
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // executor shutdownNow: the query resumes at next open
    } finally {
      if (locked[0]) {
        writing.unlock();
      }
      earlyRuns.finished(early);
    }
  }

  /**
   * Runs {@code attempt} of an accepted query: after its claim committed, on any thread; the
   * submit's early run takes it when there is one ({@code submit} null: a takeover).
   */
  private void start(long correlation, long attempt, NativeCommand submit) {
    leases.hold(correlation, attempt);
    if (submit != null && earlyRuns.handOff(submit.getPrincipal(), submit.getNamespace(),
        correlation, attempt, submit.getSubmit().getBundleSha256().toByteArray())) {
      return;
    }
    try {
      executor.execute(() -> runOne(correlation, attempt, null, () -> { }));
    } catch (RejectedExecutionException e) {
      // Closing: the query stays ACCEPTED; close gives its lease up for the next scan.
      log.info("query {} left for the next open", Long.toUnsignedString(correlation));
    }
  }

  /** Runs a query taken over or resumed (the lease scan's start). */
  private void start(long correlation, long attempt) {
    start(correlation, attempt, null);
  }

  /**
   * {@code early}: an early run's result for this query (null: execute it now); {@code
   * earlyDone} is run on this thread when the first run, the only one that may adopt it, ended
   * without recording and a rerun is to come (otherwise the caller's own cleanup follows).
   */
  private void runOne(long correlation, long attempt, QueryRunner.Computed early,
      Runnable earlyDone) {
    boolean published = false;
    try {
      if (!holdBack(options.faults().executionDelayMillis())) {
        // Closing during an injected delay: the query stays ACCEPTED, its lease given up at close.
        return;
      }
      if (!leases.holds(correlation, attempt)) {
        // A renewal was refused while it queued or stalled: another replica runs it now.
        log.info("query {} attempt {}: fenced before it ran", Long.toUnsignedString(correlation),
            attempt);
        return;
      }
      published = runRecorded(correlation, attempt, early, earlyDone);
      if (published && options.faults().releaseAfterExecution()) {
        // Test-only: released before the finally below wakes waiters, so every ticket issued
        // for this result already names a retired one.
        release(correlation);
      }
    } catch (SQLException | RuntimeException e) {
      if (!closing) {
        log.error("query {} could not record its outcome", Long.toUnsignedString(correlation), e);
      }
    } finally {
      if (!closing || published) {
        // While closing an unfinished query's lease stays held (renewed through the drain), so
        // close gives it up and another replica or the next open runs it at once.
        leases.drop(correlation, attempt);
      }
      synchronized (completions) {
        completed++;
        completions.notifyAll();
      }
    }
  }

  /**
   * Runs the query until its terminal status is recorded. A journal that cannot take the status
   * (its file system full, its connection lost), an object store that cannot take the segments
   * (down, restarting) or a process out of file descriptors leaves the query ACCEPTED with
   * nothing of its outcome recorded; it runs again after a pause — execution is deterministic
   * over immutable files, so the result is the same — until the status commits or the engine
   * closes (then it resumes at the next open). Waiting callers meanwhile see it running, never a
   * made-up status. True when this run published the terminal status (false: fenced, or nothing
   * to run).
   */
  private boolean runRecorded(long correlation, long lease, QueryRunner.Computed early,
      Runnable earlyDone) throws SQLException {
    long pauseMillis = RERUN_FIRST_PAUSE_MS;
    for (int attempt = 1; ; attempt++) {
      try {
        // An early result serves the first run only: a rerun after a refused commit executes.
        QueryStatus recorded = runner.run(correlation, lease, attempt == 1 ? early : null);
        if (attempt == 1 && early != null && recorded != null) {
          earlyAdopted.incrementAndGet();
        }
        if (attempt > 1) {
          log.info("query {} recorded its outcome on run {}",
              Long.toUnsignedString(correlation), attempt);
        }
        return recorded != null;
      } catch (SQLException e) {
        if (closing) {
          throw e;
        }
        if (attempt == 1) {
          log.warn("query {} could not record its outcome ({}); running it again until the"
              + " journal takes it", Long.toUnsignedString(correlation), e.getMessage());
        }
      } catch (SegmentStore.Unavailable e) {
        if (closing) {
          return false; // left ACCEPTED: it resumes at the next open
        }
        if (attempt == 1) {
          log.warn("query {} could not open or store its files ({}); running it again until"
              + " it can", Long.toUnsignedString(correlation), e.reason);
        }
      }
      if (attempt == 1) {
        earlyDone.run(); // no rerun adopts the early result: its hold is not kept through pauses
      }
      if (!holdBack(pauseMillis) || !leases.holds(correlation, lease)) {
        return false; // closing, or another replica holds it now
      }
      pauseMillis = Math.min(pauseMillis * 2, RERUN_MAX_PAUSE_MS);
    }
  }

  /** Waits {@code delayMillis} in short slices; false when closing cut it short. */
  private boolean holdBack(long delayMillis) {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis);
    while (!closing && end - System.nanoTime() > 0) {
      try {
        long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
        Thread.sleep(Math.min(50, left + 1));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return !closing;
  }

  @Override
  public EngineIdentity engineIdentity() {
    return IDENTITY;
  }

  /** The planner the engine was opened with; the daemon opens it with a {@link PlanCache}. */
  @Override
  public Planner planner() {
    return planner;
  }

  /** The submit's own source/requester checks, made now; see {@link RequesterCheck}. */
  @Override
  public void checkAccess(ReadAccess access, TableDeclaration table, AccessUse use) {
    try {
      if (access.source() != table.getSource()) {
        throw RightsRegistry.denied("the read access names another source than the table's");
      }
      requester.check(access.principal(), table, use);
    } catch (GatewayException e) {
      // Nothing is recorded and no native command was sent for this call, whatever the cause's
      // usual outcome.
      throw e.withOutcome(Outcome.NOT_ADMITTED);
    }
  }

  @Override
  public long nextSequence(long principal) {
    rights.require(principal);
    try {
      long next = journal.transaction(
          () -> journal.nextSequence(principal, options.firstSequence()));
      // It may come from deferred records (a chain cut short, here or on another replica); it
      // leaves the engine only durable.
      journal.flushAll();
      return next;
    } catch (SQLException e) {
      if (journal.isFullWithNothingRecorded(e)) {
        // The flush's commit found no room: not a journal that cannot be read.
        throw QueryCode.DISK_FULL.failure(
            "the journal's storage is full: the next sequence cannot be made durable");
      }
      throw unavailable.of("the native journal cannot be read", e);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>A terminal status rests on its durable commit. Any other answer — still running at the
   * deadline, the store probe's failure, an interrupted wait — names a query whose submit may be
   * a deferred commit (docs/admission.md §10), so the journal is synced before it leaves; when
   * the sync fails the answer is an unknown outcome instead, naming no query.
   */
  @Override
  public QueryStatus awaitQuery(ReadAccess access, long correlation, long deadlineNanos)
      throws InterruptedException {
    QueryStatus status;
    try {
      status = awaitStatus(access, correlation, deadlineNanos);
    } catch (InterruptedException | RuntimeException e) {
      syncBeforeAnswer(correlation, e);
      throw e;
    }
    if (status.getState() == QueryStatus.State.ACCEPTED) {
      syncBeforeAnswer(correlation, null);
    }
    return status;
  }

  private void syncBeforeAnswer(long correlation, Exception answer) {
    try {
      journal.sync();
    } catch (SQLException e) {
      GatewayException g = new GatewayException(Cause.UNKNOWN_OUTCOME, "query.unknown_outcome",
          "the query's acceptance could not be made durable", e);
      log.warn("query {}: the journal could not be synced before answering its wait",
          Long.toUnsignedString(correlation), e);
      if (answer != null) {
        g.addSuppressed(answer);
      }
      if (answer instanceof InterruptedException) {
        Thread.currentThread().interrupt(); // the wait's interrupt, kept for the caller
      }
      throw g;
    }
  }

  private QueryStatus awaitStatus(ReadAccess access, long correlation, long deadlineNanos)
      throws InterruptedException {
    long probeAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(AWAIT_STORE_PROBE_MS);
    while (true) {
      long seen;
      synchronized (completions) {
        seen = completed;
      }
      QueryStatus status = reader.status(access, correlation);
      long remaining = deadlineNanos - System.nanoTime();
      if (status.getState() != QueryStatus.State.ACCEPTED || remaining <= 0) {
        return status;
      }
      if (System.nanoTime() - probeAt >= 0) {
        // Any replica's waiter asks its own client of the one shared store: the replica running
        // the query may be another. Nothing is recorded: the same sequence and SQL resume it.
        if (!segments.reachable()) {
          throw QueryCode.SEGMENT_STORE_UNAVAILABLE.failure(
              "the retained segments' store does not answer; the accepted query runs again"
                  + " when it is back");
        }
        probeAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(AWAIT_STORE_PROBE_MS);
      }
      synchronized (completions) {
        if (completed == seen) {
          TimeUnit.NANOSECONDS.timedWait(completions,
              Math.min(remaining, TimeUnit.MILLISECONDS.toNanos(AWAIT_POLL_MS)));
        }
      }
    }
  }

  @Override
  public byte[] readManifest(ReadAccess access, long correlation) {
    return reader.manifest(access, correlation);
  }

  @Override
  public byte[] readSegment(ReadAccess access, long correlation, int index, long maxBytes) {
    return reader.segment(access, correlation, index, maxBytes);
  }

  /** Reads the segment file straight into {@code allocator}'s memory: no heap copy. */
  @Override
  public ArrowBuf readSegment(
      ReadAccess access, long correlation, int index, long maxBytes, BufferAllocator allocator) {
    return reader.segment(access, correlation, index, maxBytes, allocator);
  }

  @Override
  public boolean release(long correlation) {
    try {
      // Serialized with the sweeps' pages of every replica (JournalStore.shareReleases).
      boolean released = journal.transaction(() -> {
        journal.shareReleases();
        return journal.release(correlation);
      });
      if (released) {
        retention.released(); // its files, if only it named them, go at the next sweep
      }
      return released;
    } catch (SQLException e) {
      throw unavailable.of("the native journal cannot be written", e);
    }
  }

  @Override
  public void updateRights(Collection<PrincipalRights> next) {
    rights.replace(next);
  }

  @Override
  public io.transit.flight.nativequery.RightsLedger rightsLedger() {
    return rightsLedger;
  }

  /**
   * Tells {@code observer} how long each journal commit took, in nanoseconds, on the committing
   * thread (any engine thread): it must be cheap and thread-safe. Replaces any previous observer.
   */
  @Override
  public void observeJournalCommits(java.util.function.LongConsumer observer) {
    journal.observeCommits(observer);
  }

  @Override
  public long journalFailures() {
    return journal.failures();
  }

  /** Results dropped unpublished because another replica fenced their attempt, since open. */
  public long fencedResults() {
    return runner.fencedResults();
  }

  /**
   * Bytes the engine's execution allocator holds now: 0 once no query runs (tests check it before
   * {@link #close}, which only logs what is still held; public for tests outside this package).
   */
  public long allocatedBytes() {
    return allocator.getAllocatedMemory();
  }

  /** Statements inside DuckDB now (tests). */
  int statementsInDuckDb() {
    return sessions.runningCount();
  }

  /** True once close has seen every execution thread stop (tests). */
  boolean executionStopped() {
    return executor.isTerminated();
  }

  /** This open's lease owner id in the journal (random per open; logged at open). */
  long leaseOwner() {
    return leases.owner();
  }

  /** The engine's journal (tests count its durable commits). */
  JournalStore journal() {
    return journal;
  }

  /** Early runs whose result became their query's, since open (metrics, tests). */
  @Override
  public long earlyRunsAdopted() {
    return earlyAdopted.get();
  }

  /**
   * Of {@link #earlyRunsAdopted}, the results committed with their submit's acceptance (one
   * commit for both, no run of the query), since open (metrics, tests).
   */
  @Override
  public long earlyResultsWithSubmit() {
    return earlyWithSubmit.get();
  }

  /** Whether the namespace's early run holds a computed result for bundle {@code sha} (tests). */
  boolean earlyResultReady(long principal, long namespace, byte[] sha) {
    return earlyRuns.ready(principal, namespace, sha, 0) != null;
  }

  /** Early runs started and not yet finished (metrics, tests). */
  @Override
  public int earlyRunsRunning() {
    return earlyRuns.running();
  }

  /**
   * Cancels the statements inside DuckDB until the execution threads have stopped or {@code
   * deadline} passed: a Java interrupt does not reach a native query, and a statement marked
   * running just before it executes escapes one cancel, so it is asked again every slice. True
   * once every execution thread ended; false when some still ran at {@code deadline}.
   */
  private boolean cancelUntilStopped(long deadline) throws InterruptedException {
    boolean logged = false;
    do {
      int cancelled = sessions.cancelRunning();
      if (cancelled > 0 && !logged) {
        log.info("engine closing: cancelled {} statement(s) still running in DuckDB after {} ms;"
            + " their queries run again at the next open or on another replica", cancelled,
            options.shutdownWait().toMillis());
        logged = true;
      }
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (executor.awaitTermination(Math.max(Math.min(CANCEL_SLICE_MS, left), 0),
          TimeUnit.MILLISECONDS)) {
        return true;
      }
    } while (deadline - System.nanoTime() > 0);
    return false;
  }

  /** The write side of the sweep's lock, as a sweep removing files holds it (tests). */
  java.util.concurrent.locks.Lock sweepHold() {
    return retention.removing();
  }

  /** Runs one retention sweep now, on the calling thread (tests; the timer runs the same). */
  Retention.Swept sweepRetention() throws SQLException, IOException {
    return retention.sweep();
  }

  /**
   * Closes the engine on the calling thread: no takeover starts, running and queued queries get
   * {@code shutdownWait} to finish (their leases still renewed, so no other replica runs them
   * twice), then what is still inside DuckDB is cancelled and the rest waits at most {@code
   * shutdownWait} again. A query that did not finish stays ACCEPTED with its lease given up, so
   * another replica or the next open runs it at once.
   *
   * @throws IllegalStateException when an execution thread still runs after both waits: its
   *     query's lease is then not given up (it lapses, {@code engine.lease_ms}, so no other replica
   *     starts that query while it may still run here), and the journal, the segment store and
   *     DuckDB it still uses are not closed under it but left to the process's exit
   */
  @Override
  public void close() {
    closing = true;
    leases.stopScans();
    retention.close();
    executor.shutdown();
    boolean stopped = true;
    try {
      if (!executor.awaitTermination(options.shutdownWait().toMillis(), TimeUnit.MILLISECONDS)) {
        executor.shutdownNow(); // drops queued runs; their queries resume elsewhere
        stopped = cancelUntilStopped(System.nanoTime() + options.shutdownWait().toNanos());
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
      stopped = executor.isTerminated();
    }
    leases.stop();
    if (!stopped) {
      // Until 2026-12-07 the close went on: it gave the running query's lease away, so another
      // replica ran it while it still ran here, and closed the pools its thread still used.
      throw new IllegalStateException("engine closing: execution threads still running after "
          + 2 * options.shutdownWait().toMillis() + " ms; their leases lapse, and the journal,"
          + " the segment store and DuckDB are left open for the process's exit");
    }
    leases.giveUp();
    verifiers.close(); // callers have stopped: no seal prefetches any more
    sessions.close();
    try {
      tables.close();
    } catch (SQLException e) {
      log.warn("closing DuckDB failed", e);
    }
    try {
      journal.close();
    } catch (SQLException e) {
      log.warn("closing the journal failed", e);
    }
    // After the pool and the sweep stopped: no store call is in flight.
    segments.close();
    try {
      allocator.close();
    } catch (IllegalStateException e) {
      log.warn("execution buffers still allocated at close", e);
    }
  }
}
