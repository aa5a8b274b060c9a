package io.transit.flight.server;

import io.grpc.ServerInterceptors;
import io.transit.flight.admission.AdmissionConfig;
import io.transit.flight.admission.AdmissionLimiter;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.catalog.SqlInfoCatalog;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.ProducerPool;
import io.transit.flight.channel.StreamExecutorPool;
import io.transit.flight.channel.StreamLimits;
import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.nativequery.NativeQueryAdmin;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.nativequery.embedded.EngineOptions;
import io.transit.flight.nativequery.embedded.JournalStore;
import io.transit.flight.nativequery.embedded.PlanCache;
import io.transit.flight.nativequery.embedded.SegmentSettings;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import io.transit.flight.nativequery.postgres.PostgresSettings;
import io.transit.flight.server.auth.AuthInterceptor;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.PrincipalKeys;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.server.config.StateLock;
import io.transit.flight.server.ops.AdmissionRecorder;
import io.transit.flight.server.ops.Operations;
import io.transit.flight.server.ops.OpsGauges;
import io.transit.flight.server.ops.OpsSettings;
import io.transit.flight.server.request.Deadlines;
import io.transit.flight.server.stream.StreamShares;
import io.transit.flight.server.sql.CompileGate;
import io.transit.flight.server.sql.MetadataService;
import io.transit.flight.server.sql.ResultStreamer;
import io.transit.flight.server.sql.StatementService;
import io.transit.flight.server.sql.TransitSqlProducer;
import io.transit.flight.server.transport.AuthenticationBudget;
import io.transit.flight.server.transport.CallEnds;
import io.transit.flight.threads.DeadlineTimer;
import io.transit.flight.threads.LastIdlePool;
import io.transit.flight.server.transport.ConnectionBudget;
import io.transit.flight.server.request.ClientFaultLog;
import io.transit.flight.server.request.MalformedRequests;
import io.transit.flight.server.request.UnknownMethods;
import io.transit.flight.server.transport.Listeners;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.TransitDefinition;
import java.io.IOException;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.auth.ServerAuthHandler;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon: builds every component from a {@link ResolvedConfig}, serves Flight SQL on a
 * grpc-netty-shaded listener, reloads credentials and rights on request, and drains on close.
 *
 * <p>Threads: {@link #start} and {@link #close} run on the main thread (SIGTERM and SIGINT make
 * it close; close is idempotent, and also runs on the JVM's shutdown hook at any other exit);
 * {@link #reload} runs on a signal thread, or once on the main thread for a SIGHUP held while the
 * daemon started ({@code cli.Reloads}), one at a time either way. gRPC calls run on the
 * bounded service executor; DoGet production on the T_caller pool; stream writes on the stream
 * registry's serializing executors.
 */
public final class GatewayServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);
  /** The build's Maven version (until 2026-12-07 a constant that did not follow the pom). */
  public static final String VERSION = buildVersion();
  /**
   * The build's identity for operators (the CLI's --version, the start's log line): the version,
   * the commit it was built from ("-dirty" with changes not committed) and when.
   */
  public static final String BUILD = buildIdentity();
  /**
   * Decoded batches a stream may hold at once (the profile's "one bounded batch is resident"):
   * its producer reads the next segment only once the previous batch was written and freed.
   */
  private static final int RESIDENT_BATCHES = 1;

  private final StateLock stateLock;
  private final BufferAllocator allocator;
  private final NativeQueryClient engine;
  private final NativeQueryAdmin engineAdmin;
  private final Authorization authorization;
  private final StreamRegistry streams;
  private final ProducerPool producers;
  private final ExecutorService serviceExecutor;
  private final ExecutorService flightExecutor;
  private final ScheduledExecutorService timer;
  private final SignaturePool signers;
  private final Bindings bindings;
  private final ConnectionBudget connections;
  private final Listeners server;
  // The main thread and the shutdown hook may both close: the first closes, the other returns.
  private final AtomicInteger closed = new AtomicInteger();
  private final Operations ops;
  private volatile boolean closedCleanly; // written by the closing thread, read by main after it

  private GatewayServer(ResolvedConfig cfg, GatewayHooks hooks, StateDirectory state,
      StateLock stateLock, Operations ops) throws ConfigException, IOException {
    this.ops = ops;
    this.stateLock = stateLock;
    Limits limits = cfg.limits();
    reportTightened(state);
    Ed25519.KeyPair ticketKey = state.loadOrCreateKey(state.ticketKeyFile());
    // Generated and guarded like every key; the embedded engine needs no inspection signatures,
    // a remote native client will sign its inspection reads with it.
    state.loadOrCreateKey(state.inspectionKeyFile());
    this.bindings = new Bindings(state);
    Bindings.Built built = bindings.build(cfg);
    AuthSnapshot snapshot = built.snapshot();

    // What this constructor started, newest first: a step that throws stops all of it before
    // the caller releases the state lock (the engine runs takeovers and sweeps from its open).
    ArrayDeque<Runnable> undo = new ArrayDeque<>();
    try {
      this.allocator = new RootAllocator(limits.rootAllocatorBytes());
      undo.push(allocator::close);
      ErrorMapper errors = new ErrorMapper(limits.diagnosticMetadataBytes());
      EmbeddedEngine embedded = openEngine(state, cfg, snapshot, hooks);
      undo.push(embedded::close);
      this.engine = embedded;
      this.engineAdmin = embedded;
      // The engine creates its journal and segment files with the process umask on first run.
      reportTightened(state);

      Clock clock = hooks.clock(Clock.systemUTC());
      try {
        // Before the rights are recorded (they name each principal's key): a principal key lost
        // or replaced after its principal was used is refused, and only then are generated keys
        // written. The engine opened with them in memory; a refusal here leaves nothing behind.
        PrincipalKeys.check(engineAdmin.rightsLedger(), cfg, built.onFile());
      } catch (RuntimeException e) {
        throw new IOException("the journal's rights cannot be read: " + e.getMessage(), e);
      }
      bindings.keep(built);
      try {
        // Records this file's rights in the journal (a new epoch when they differ from the
        // current version) and decides every call under the journal's current rights from here on.
        this.authorization = new Authorization(snapshot, engineAdmin.rightsLedger(),
            engineAdmin::updateRights, clock);
      } catch (RuntimeException e) {
        throw new IOException("the rights cannot be recorded in the journal: " + e.getMessage(), e);
      }
      log.info("rights epoch {} in force", authorization.rightsEpoch());
      TicketService tickets = new TicketService(ticketKey,
          TransitDefinition.of(cfg.realmName(), cfg.realm(), cfg.service()), clock);
      AdmissionConfig admissionConfig = new AdmissionConfig(limits.admissionPerGateway(),
          limits.admissionPerCaller(), limits.uploadPartBytes());
      // A statement's command signatures are independent: its service thread and these helpers
      // sign them together (the helpers never block, so one pool serves every admission).
      this.signers = SignaturePool.forProcessors("transit-sign");
      undo.push(signers::close);
      AdmissionService admission = new AdmissionService(engine,
          AdmissionLimiter.of(admissionConfig), admissionConfig, signers);
      this.streams = new StreamRegistry(allocator,
          new StreamExecutorPool("transit-writer", limits.writerThreads()),
          new StreamLimits(limits.maxLiveStreams(), limits.streamAllocatorBytes(),
              Duration.ofMillis(limits.creditStallMs()), RESIDENT_BATCHES));
      undo.push(() -> streams.shutdown(Duration.ofSeconds(1))); // no stream was opened yet
      FlightOutboundHandler handler = new FlightOutboundHandler();
      this.producers = new ProducerPool("transit-producer", limits.producerThreads(), handler);
      undo.push(producers::shutdownNow);

      this.timer = DeadlineTimer.create();
      undo.push(timer::shutdownNow);
      CallEnds callEnds = new CallEnds();
      Deadlines deadlines = new Deadlines(limits.controlDeadlineDefaultMs(),
          limits.controlDeadlineMaxMs(), limits.dataDeadlineDefaultMs(),
          limits.dataDeadlineMaxMs());
      // Compile slots have a limiter of their own: a compilation never takes an admission's slot.
      CompileGate compiler = new CompileGate(engine.planner(),
          new AdmissionLimiter(limits.compilePerGateway(), limits.compilePerCaller()),
          limits.compileTimeoutMs(), timer);
      StatementService statements = new StatementService(authorization, compiler, admission,
          engine, tickets, limits, deadlines, new AdmissionRecorder());
      MetadataService metadata = new MetadataService(new CatalogResults(
              new SqlInfoCatalog(VERSION, SqlInfoCatalog.runningArrowVersion())),
          tickets, authorization, engine, handler, allocator, limits);
      ResultStreamer results = new ResultStreamer(authorization, engine, handler, allocator,
          limits);
      TransitSqlProducer producer = new TransitSqlProducer(errors, authorization, tickets, engine,
          statements, metadata, results, streams, handler, producers,
          new StreamShares(limits.maxLiveStreamsPerCaller()), limits, deadlines, timer, callEnds);
      // Admissions and compilations in flight each hold a service thread; eight more stay free
      // for metadata and session calls however many of those are busy.
      this.serviceExecutor = LastIdlePool.create("transit-grpc",
          limits.admissionPerGateway() + limits.compilePerGateway() + 8);
      undo.push(serviceExecutor::shutdownNow);
      this.flightExecutor = LastIdlePool.create("transit-flight", 4);
      undo.push(flightExecutor::shutdownNow);
      this.connections = new ConnectionBudget(limits.maxConnections(), errors,
          new AuthenticationBudget(limits.unauthenticatedConnectionMs()));
      ClientFaultLog faults = new ClientFaultLog(TimeUnit.SECONDS.toNanos(10));
      // ops: the last interceptor runs first — a DoGet's end, request id, then authentication,
      // then the caller tap.
      this.server = Listeners.build(cfg,
          ServerInterceptors.intercept(
              // Parsed inside the call so that a malformed message gets a status and a trailer.
              MalformedRequests.guard(FlightGrpcUtils.createFlightService(allocator, producer,
                  ServerAuthHandler.NO_OP, flightExecutor).bindService(), errors, faults,
                  limits.maxInboundMessageBytes()),
              connections.authentication(), // after authentication: the call authenticated
              ops.observer().callerTap(), new AuthInterceptor(authorization, errors),
              ops.observer().requestId(), callEnds),
          serviceExecutor, connections,
          new Listeners.Extras(List.of(MalformedRequests.guard(ops.healthService(errors), errors, faults,
                  limits.maxInboundMessageBytes())), ops.observer(),
              new UnknownMethods(errors, faults, List.of(ops.observer().requestId()))));
      OpsGauges.register(ops.metrics(), allocator, streams, callEnds, connections, server,
          engineAdmin, state.engineDir().resolve("segments"));
    } catch (ConfigException | IOException | RuntimeException | Error e) {
      while (!undo.isEmpty()) {
        try {
          undo.pop().run();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
  }

  private static void reportTightened(StateDirectory state) throws ConfigException {
    for (String line : state.tighten()) {
      log.warn("state_dir {}", line);
    }
  }

  /**
   * The one place the embedded engine is built; everything else sees it as a {@link
   * NativeQueryClient} and a {@link NativeQueryAdmin}.
   */
  private static EmbeddedEngine openEngine(StateDirectory state, ResolvedConfig cfg,
      AuthSnapshot snapshot, GatewayHooks hooks)
      throws ConfigException, IOException {
    if (hooks != GatewayHooks.NONE) {
      log.warn("TEST FAULTS ENABLED ({}): this daemon is for tests only", hooks);
    }
    try {
      EngineOptions options = Bindings.engineOptions(cfg).withFaults(hooks.engineFaults());
      if (cfg.journal().shared()) {
        log.info("journal: PostgreSQL {}",
            PostgresSettings.shown(cfg.journal().postgres().jdbcUrl()));
        if (cfg.segments() instanceof SegmentSettings.Local) {
          // Right for one replica; with more, a ticket redeemed on a replica that did not store
          // its result's files fails closed (query.evidence), docs/deployment.md.
          log.warn("journal is shared (PostgreSQL) but segments are local files: with more than"
              + " one replica, keep segments in the object store (segments.kind s3)");
        }
        return EmbeddedEngine.open(state.engineDir(), options,
            PostgresJournal.open(cfg.journal().postgres()),
            hooks.enginePublicationsNone() ? List.of() : Bindings.publications(cfg),
            snapshot.rights(), PlanCache.withDefaults());
      }
      return EmbeddedEngine.open(state.engineDir(), options,
          hooks.enginePublicationsNone() ? List.of() : Bindings.publications(cfg),
          // The engine owns compilation; the gateway asks it (NativeQueryClient.planner()), so
          // a statement is parsed once, not at each of its compile, submit check and execution.
          snapshot.rights(), PlanCache.withDefaults());
    } catch (IllegalArgumentException e) {
      // A publication whose data does not match its declaration: the message names both.
      throw new ConfigException(e.getMessage(), e);
    } catch (JournalStore.TooNew e) {
      throw new JournalTooNewException(e.getMessage(), e);
    } catch (SQLException e) {
      throw new IOException("native engine failed to open: " + e.getMessage(), e);
    }
  }

  /** Builds and starts the daemon; the caller owns the result and must close it. */
  public static GatewayServer start(ResolvedConfig cfg) throws ConfigException, IOException {
    return start(cfg, GatewayHooks.NONE);
  }

  /**
   * As {@link #start(ResolvedConfig)} with test hooks: only the CLI passes anything but {@link
   * GatewayHooks#NONE}, and only from the test-only environment variable.
   */
  public static GatewayServer start(ResolvedConfig cfg, GatewayHooks hooks)
      throws ConfigException, IOException {
    return start(cfg, hooks, new Operations(OpsSettings.defaults()));
  }

  /**
   * As {@link #start(ResolvedConfig, GatewayHooks)} with the operator-facing parts ({@code ops}:
   * health, metrics, access log); the server closes {@code ops} when it closes.
   */
  public static GatewayServer start(ResolvedConfig cfg, GatewayHooks hooks, Operations ops)
      throws ConfigException, IOException {
    StateDirectory state = new StateDirectory(cfg.stateDir(), new SecureRandom());
    state.prepare();
    StateLock lock = StateLock.acquire(cfg.stateDir());
    state.emptyTemporary();
    GatewayServer g;
    try {
      g = new GatewayServer(cfg, hooks, state, lock, ops);
    } catch (ConfigException | IOException | RuntimeException | Error e) {
      ops.close();
      // The constructor stopped what it had started; another attempt in this process may take
      // the directory.
      try {
        lock.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    try {
      g.server.start();
      ops.startMetrics();
    } catch (IOException | RuntimeException | Error e) {
      g.close();
      throw e;
    }
    ops.serving(); // engine open, publications loaded, listener bound
    // The build's identity with it: an upgrade's log then says which build serves.
    if (cfg.transport().tcp()) {
      log.info("transit flight gateway listening on {}:{}{}, build {}", cfg.host(), g.port(),
          cfg.transport().tls() ? " (TLS)" : "", BUILD);
    }
    if (cfg.transport().unixSocket() != null) {
      log.info("transit flight gateway listening on unix:{}, build {}",
          cfg.transport().unixSocket(), BUILD);
    }
    return g;
  }

  /**
   * True once {@link #close} drained every stream writer and found no leaked stream and no byte
   * left in the root allocator. The CLI turns false into a non-zero exit status.
   */
  public boolean closedCleanly() {
    return closedCleanly;
  }

  /** The bound TCP port, or -1 when only the Unix socket is served. */
  public int port() {
    return server.port();
  }

  /** The connection budget (live and peak connections holding a slot). */
  public ConnectionBudget connections() {
    return connections;
  }

  public BufferAllocator allocator() {
    return allocator;
  }

  public StreamRegistry streams() {
    return streams;
  }

  /**
   * Replaces configuration, credentials and bindings as one snapshot and records its rights in
   * the journal, returning once that commit returned (every replica on the journal decides under
   * them from then on). A configuration that fails to load or validate, or a journal that cannot
   * record it, is refused and the running one stays in force. The engine takes the new rights
   * before the new view is installed: a call that sees it meets an engine that enforces it.
   */
  public void reload(ResolvedConfig next) throws ConfigException {
    AuthSnapshot s = bindings.next(authorization.current().config(), next,
        (cfg, onFile) -> PrincipalKeys.check(engineAdmin.rightsLedger(), cfg, onFile));
    long epoch = authorization.install(s);
    log.info("configuration reloaded: {} callers, rights epoch {}", next.callers().size(), epoch);
  }

  /** The operator-facing parts: health, metrics and the access log. */
  public Operations operations() {
    return ops;
  }

  /**
   * A journal a newer build wrote (its format is above this build's, {@link JournalStore#FORMAT}):
   * the CLI prints it as one line and exits 2.
   */
  public static final class JournalTooNewException extends ConfigException {
    private static final long serialVersionUID = 1L;

    JournalTooNewException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static java.util.Properties buildProperties() {
    try (var in = GatewayServer.class.getResourceAsStream("/transit-flight-version.properties")) {
      java.util.Properties p = new java.util.Properties();
      if (in != null) {
        p.load(in);
      }
      return p;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String buildVersion() {
    String v = buildProperties().getProperty("version", "");
    if (v.isBlank() || v.startsWith("$")) {
      throw new IllegalStateException(
          "the build wrote no version (transit-flight-version.properties)");
    }
    return v;
  }

  /**
   * {@link #VERSION}, the commit and the time of the build: written by the build (gateway-server's
   * pom runs git); "unknown" for a build from a tree without git's history (a source archive).
   */
  private static String buildIdentity() {
    java.util.Properties p = buildProperties();
    return VERSION + " (commit " + known(p.getProperty("commit")) + ", built "
        + known(p.getProperty("built")) + ")";
  }

  private static String known(String value) {
    return value == null || value.isBlank() || value.startsWith("$") ? "unknown" : value;
  }

  /** Stops accepting calls, lets running ones finish within a bound, then frees everything. */
  @Override
  public void close() {
    if (closed.getAndIncrement() != 0) {
      return;
    }
    ops.draining();
    ops.endWatches(); // never ending by themselves, they would hold the listener's stop 10 s
    server.shutdown();
    boolean listenersStopped = false;
    boolean callsCut = false;
    try {
      listenersStopped = server.awaitTermination(10, TimeUnit.SECONDS);
      if (!listenersStopped) {
        // The listener also waits for idle connections to close; only a client still inside a
        // call (a stream it stopped reading, say) is cut without its answer, and then the stop
        // is not a drained one, whatever is freed after.
        long open = ops.observer().openCalls();
        if (open > 0) {
          callsCut = true;
          log.warn("{} calls still open after 10 s of draining are cut", open);
        }
        server.shutdownNow();
        listenersStopped = server.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
    }
    if (!listenersStopped) {
      log.warn("listeners still had calls after 15 s; their socket and event loops are released");
      server.release();
    }
    boolean executorsStopped = producers.shutdown(Duration.ofSeconds(10), Duration.ofSeconds(5));
    timer.shutdownNow(); // pending data deadlines only abort streams that are gone by now
    boolean drained = streams.shutdown(Duration.ofSeconds(10));
    if (!drained) {
      log.warn("stream writers did not drain within 10 s");
    }
    serviceExecutor.shutdown();
    flightExecutor.shutdown();
    executorsStopped &= stopped(serviceExecutor, "gRPC service");
    executorsStopped &= stopped(flightExecutor, "Flight service");
    // A thread still running here may still be inside the engine closed next: not a clean stop.
    drained &= listenersStopped && executorsStopped && !callsCut;
    signers.close(); // no admission runs any more
    try {
      engine.close();
    } catch (RuntimeException e) {
      // The lock, the allocator check and the report below still run; the stop is not clean.
      log.error("closing the engine failed", e);
      drained = false;
    }
    try {
      stateLock.close();
    } catch (IOException e) {
      log.warn("state directory lock: release failed (the OS drops it at exit)");
    }
    long leaked = allocator.getAllocatedMemory();
    // Operators size root_allocator_bytes from the peak; scripts/bench reads it for P4.
    long peakBytes = allocator.getPeakMemoryAllocation();
    boolean clean = drained && leaked == 0 && streams.leakedStreams() == 0;
    if (leaked != 0) {
      log.error("{} bytes still allocated at shutdown", leaked);
    } else {
      try {
        allocator.close();
      } catch (IllegalStateException e) {
        log.error("allocator not empty at shutdown: {}", e.getMessage());
        clean = false;
      }
    }
    closedCleanly = clean;
    ops.close();
    // One line for operators and tests: what the budgets saw over the daemon's life.
    log.info("transit flight gateway stopped: leaked_bytes={} leaked_streams={} drained={}"
            + " allocator_peak_bytes={} connections_peak={} stream_peak_bytes={}",
        leaked, streams.leakedStreams(), drained, peakBytes, connections.peak(),
        streams.streamPeakBytes());
  }

  /** The serving pools' stop: 10 s for their calls, then interrupted, 5 s more (exit 3 after). */
  private static boolean stopped(ExecutorService e, String what) {
    return LastIdlePool.stop(e, what, Duration.ofSeconds(10), Duration.ofSeconds(5), () -> { });
  }
}
