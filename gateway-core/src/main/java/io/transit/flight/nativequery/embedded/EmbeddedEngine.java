package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.NativeQueryAdmin;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded native query system: journal (SQLite), published Tables scanned in place and
 * execution (DuckDB),
 * retained results (content-addressed segment files) behind {@link NativeQueryClient}.
 *
 * <p>Threads: {@link #send}, the readers, {@link #awaitQuery}, {@link #release} and {@link
 * #updateRights} may be called from any thread (gRPC service threads, T_caller workers). Accepted
 * queries run on the engine's own bounded pool ({@code executionThreads}); a finished query wakes
 * every {@link #awaitQuery} waiter through {@code completions}. {@link #close()} is called once by
 * the owner after callers stop; it waits {@code shutdownWait} for running queries (unfinished ones
 * stay ACCEPTED in the journal and resume at the next open). The retention policy runs on one
 * {@code native-retention} thread ({@link Retention}), stopped first by {@link #close()}.
 */
public final class EmbeddedEngine implements NativeQueryClient, NativeQueryAdmin {
  private static final Logger log = LoggerFactory.getLogger(EmbeddedEngine.class);

  private final EngineOptions options;
  private final JournalStore journal;
  private final DuckTables tables;
  private final RightsRegistry rights;
  private final CommandProcessor commands;
  private final ResultReader reader;
  private final QueryRunner runner;
  private final DuckSessions sessions;
  private final BufferAllocator allocator;
  private final Planner planner;
  private final ExecutorService executor;
  private final Retention retention;
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
    UploadValidator uploads = new UploadValidator(journal, rights, tables, planner, options);
    this.commands = new CommandProcessor(journal, rights, uploads, options.firstSequence());
    this.reader = new ResultReader(journal, rights, segments);
    this.sessions = new DuckSessions(tables);
    this.retention = new Retention(journal, segments, options.retention(),
        System::currentTimeMillis, java.time.Duration.ofSeconds(2));
    this.runner = new QueryRunner(journal, tables, sessions, segments, allocator, planner,
        options.exportBatchRows(), () -> closing, retention.writing(),
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
    AtomicInteger n = new AtomicInteger();
    this.executor = new ThreadPoolExecutor(options.executionThreads(),
        options.executionThreads(), 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "native-exec-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Opens (or creates) the engine's state under {@code stateDir}, publishes the Tables as DuckDB
   * views over their files (reading only footers: see {@link DuckTables}) and resumes accepted-but-unfinished queries (unless execution is deferred).
   *
   * @throws IllegalArgumentException when a publication does not match its declaration
   */
  public static EmbeddedEngine open(Path stateDir, EngineOptions options,
      List<Publication> publications, Collection<PrincipalRights> rights, Planner planner)
      throws IOException, SQLException {
    Files.createDirectories(stateDir);
    if (options.recipient() == 0) {
      log.warn("no proof recipient configured: principal proofs are accepted for any service id");
    }
    RightsRegistry registry = new RightsRegistry(rights);
    BufferAllocator allocator = new RootAllocator(options.memoryLimitBytes());
    JournalStore journal = null;
    DuckTables tables = null;
    try {
      journal = SqliteJournal.open(stateDir.resolve("journal.sqlite"));
      tables = DuckTables.open(publications, options.duck(), stateDir, allocator);
      SegmentStore segments = new LocalSegmentStore(stateDir.resolve("segments"));
      EmbeddedEngine engine =
          new EmbeddedEngine(options, journal, tables, registry, segments, allocator, planner);
      if (!options.deferExecution()) {
        JournalStore j = journal;
        for (long correlation : j.transaction(j::unfinished)) {
          engine.start(correlation);
        }
      }
      engine.retention.start();
      return engine;
    } catch (IOException | SQLException | RuntimeException e) {
      if (tables != null) {
        tables.close();
      }
      if (journal != null) {
        journal.close();
      }
      allocator.close();
      throw e;
    }
  }

  @Override
  public CommandOutcome send(SignedCommand command) {
    NativeCommand parsed = CommandProcessor.parse(command);
    commands.authenticate(command, parsed);
    if (options.faults().fail(CommandFaults.Point.BEFORE_RECORD, parsed)) {
      throw unknownOutcome(parsed, "injected before the record");
    }
    CommandProcessor.Result result;
    try {
      result = commands.decide(command, parsed);
    } catch (SQLException e) {
      // A failed commit may or may not have reached the disk: the outcome is unknown.
      throw unknownOutcome(parsed, "the journal commit failed").with("reason", e.getMessage());
    } catch (GatewayException e) {
      throw e;
    } catch (RuntimeException e) {
      // A defect (e.g. in the planner): the transaction rolled back, nothing was recorded.
      log.error("command at sequence {} failed", Long.toUnsignedString(parsed.getSequence()), e);
      throw QueryCode.INTERNAL.failure("the native command could not be decided", e);
    }
    if (result.startCorrelation() != 0 && !options.deferExecution()) {
      start(result.startCorrelation());
    }
    if (options.faults().fail(CommandFaults.Point.AFTER_RECORD, parsed)) {
      throw unknownOutcome(parsed, "injected after the record");
    }
    return result.outcome();
  }

  private static GatewayException unknownOutcome(NativeCommand c, String why) {
    return GatewayException.of(Cause.UNKNOWN_OUTCOME, "query.unknown_outcome",
            "the native command's outcome is unknown: " + why)
        .with(Fact.unsigned("sequence", c.getSequence()))
        .with(Fact.unsigned("namespace", c.getNamespace()));
  }

  private void start(long correlation) {
    try {
      executor.execute(() -> runOne(correlation));
    } catch (RejectedExecutionException e) {
      // Closing: the query stays ACCEPTED in the journal and resumes at the next open.
      log.info("query {} left for the next open", Long.toUnsignedString(correlation));
    }
  }

  private void runOne(long correlation) {
    try {
      if (!holdBack(options.faults().executionDelayMillis())) {
        // Closing during an injected delay: the query stays ACCEPTED and resumes at the next open.
        return;
      }
      runner.run(correlation);
      if (options.faults().releaseAfterExecution()) {
        // Test-only: released before the finally below wakes waiters, so every ticket issued
        // for this result already names a retired one.
        release(correlation);
      }
    } catch (SQLException | RuntimeException e) {
      if (!closing) {
        log.error("query {} could not record its outcome", Long.toUnsignedString(correlation), e);
      }
    } finally {
      synchronized (completions) {
        completed++;
        completions.notifyAll();
      }
    }
  }

  /** Waits out an injected execution delay in short slices; false when closing cut it short. */
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

  /** The planner the engine was opened with; the daemon opens it with a {@link PlanCache}. */
  @Override
  public Planner planner() {
    return planner;
  }

  @Override
  public long nextSequence(long principal) {
    rights.require(principal);
    try {
      long next = journal.transaction(
          () -> journal.nextSequence(principal, options.firstSequence()));
      // It may come from deferred records (a chain cut short); it leaves the engine only durable.
      journal.flush();
      return next;
    } catch (SQLException e) {
      throw new GatewayException(Cause.TRANSPORT, "query.journal_unavailable",
          "the native journal cannot be read", e);
    }
  }

  @Override
  public QueryStatus awaitQuery(ReadAccess access, long correlation, long deadlineNanos)
      throws InterruptedException {
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
      synchronized (completions) {
        if (completed == seen) {
          TimeUnit.NANOSECONDS.timedWait(completions, remaining);
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
      return journal.transaction(() -> journal.release(correlation));
    } catch (SQLException e) {
      throw new GatewayException(Cause.TRANSPORT, "query.journal_unavailable",
          "the native journal cannot be written", e);
    }
  }

  @Override
  public void updateRights(Collection<PrincipalRights> next) {
    rights.replace(next);
  }

  /**
   * Tells {@code observer} how long each journal commit took, in nanoseconds, on the committing
   * thread (any engine thread): it must be cheap and thread-safe. Replaces any previous observer.
   */
  public void observeJournalCommits(java.util.function.LongConsumer observer) {
    journal.observeCommits(observer);
  }

  /** The engine's journal (tests count its durable commits). */
  JournalStore journal() {
    return journal;
  }

  /** Runs one retention sweep now, on the calling thread (tests; the timer runs the same). */
  Retention.Swept sweepRetention() throws SQLException, IOException {
    return retention.sweep();
  }

  @Override
  public void close() {
    closing = true;
    retention.close();
    executor.shutdown();
    try {
      if (!executor.awaitTermination(options.shutdownWait().toMillis(), TimeUnit.MILLISECONDS)) {
        executor.shutdownNow();
        executor.awaitTermination(options.shutdownWait().toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
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
    try {
      allocator.close();
    } catch (IllegalStateException e) {
      log.warn("execution buffers still allocated at close", e);
    }
  }
}
