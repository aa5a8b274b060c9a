package io.transit.flight.server.cli;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.embedded.JournalStore;
import io.transit.flight.server.GatewayHooks;
import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateLock;
import io.transit.flight.server.ops.LogSetup;
import io.transit.flight.server.ops.Operations;
import io.transit.flight.server.ops.OpsSettings;
import io.transit.flight.server.testing.TestFaults;
import io.transit.flight.server.transport.Listeners;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The daemon's command line (picocli): {@code run}, {@code demo}, {@code check-config},
 * {@code init} and {@code compact-journal}. Exit codes (docs/operations.md): 0 done, 1 runtime failure, 2 configuration
 * refused (including a missing or mismatching data file, a busy state directory and a journal a
 * newer build wrote), 3 stopped with a leak or an undrained stream, 64 command-line usage error.
 *
 * <p>SIGTERM (and Ctrl-C) drain and stop; SIGHUP reloads credentials, rights and the log level
 * from the same file — a bad file is refused and the running configuration stays.
 *
 * <p>Threads: the main thread parses, starts and waits; reloads run on the signal thread.
 */
@Command(name = "transit-flight", mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Transit Flight Gateway: a Flight SQL gateway over published Tables.",
    subcommands = {Main.Run.class, Main.Demo.class, CheckConfig.class, Init.class,
        CompactJournal.class, CommandLine.HelpCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:done", "1:runtime failure", "2:configuration refused",
        "3:stopped with a leak or an undrained stream", "64:usage error"})
public final class Main implements Callable<Integer> {
  static final int OK = 0;
  static final int FAILED = 1;
  static final int CONFIG = 2;
  static final int UNCLEAN = 3;
  static final int USAGE = 64;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /**
   * Sizes both Netty pools (Arrow's and gRPC's shaded copy) with 16 MiB chunks unless the operator
   * set them. Arrow rounds a buffer up to a power of two assuming such chunks, while Netty's own
   * default is 4 MiB: a 2-4 MiB segment buffer or outbound message would then be allocated
   * outside the pool — a fresh, zero-filled direct buffer per batch. Must run before any Netty
   * class initialises.
   */
  static void poolWholeBatches() {
    for (String key : new String[] {
        "io.netty.allocator.maxOrder", "io.grpc.netty.shaded.io.netty.allocator.maxOrder"}) {
      if (System.getProperty(key) == null) {
        System.setProperty(key, "11");
      }
    }
  }

  public static void main(String[] args) {
    Signals.holdHangups();
    poolWholeBatches();
    System.exit(execute(args));
  }

  /** Runs the command line; returns the exit code. */
  static int execute(String... args) {
    CommandLine cli = new CommandLine(new Main());
    cli.setParameterExceptionHandler((e, a) -> {
      System.err.println("transit-flight: " + e.getMessage() + " (see: transit-flight "
          + (e.getCommandLine().getParent() != null
              ? e.getCommandLine().getCommandName() + " " : "") + "--help)");
      return USAGE;
    });
    cli.setExecutionExceptionHandler((e, c, parsed) -> {
      if (e instanceof StateLock.StateDirectoryBusyException
          || e instanceof GatewayServer.JournalTooNewException) {
        System.err.println("transit-flight: " + e.getMessage());
        return CONFIG;
      }
      if (e instanceof ConfigException) {
        System.err.println("transit-flight: configuration refused: " + e.getMessage());
        return CONFIG;
      }
      if (e instanceof IOException) {
        System.err.println("transit-flight: " + e.getMessage());
        return FAILED;
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
        return FAILED;
      }
      throw e;
    });
    return cli.execute(args);
  }

  /** No command: the usage, as a usage error. */
  @Override
  public Integer call() {
    spec.commandLine().usage(System.err);
    return USAGE;
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"transit-flight " + GatewayServer.BUILD,
          "Java " + Runtime.version() + ", journal format " + JournalStore.FORMAT};
    }
  }

  /** Logging and operations options shared by the serving commands. */
  static final class OpsOptions {
    /** The most warm-up statements: at tens of milliseconds each on a cold JVM, minutes. */
    static final int MAX_WARM_UP = 100_000;

    @Option(names = "--log-level", paramLabel = "LEVEL",
        description = "trace, debug, info, warn or error (overrides ops.log.level)")
    String logLevel;
    @Option(names = "--log-format", paramLabel = "FORMAT",
        description = "text or json (overrides ops.log.format)")
    String logFormat;
    @Option(names = "--metrics-host", paramLabel = "HOST",
        description = "the metrics listener's address (overrides ops.metrics.host)")
    String metricsHost;
    @Option(names = "--metrics-port", paramLabel = "PORT",
        description = "serve Prometheus metrics on this port, 0 for any (overrides ops.metrics.port)")
    Integer metricsPort;
    @Option(names = "--drain-notice-ms", paramLabel = "MS",
        description = "report NOT_SERVING this long before stopping (overrides ops.drain_notice_ms)")
    Long drainNoticeMs;
    @Option(names = "--warm-up", paramLabel = "N", defaultValue = "0",
        description = "before serving, run N statements on a scratch demo gateway so the JIT has"
            + " compiled the serving path (docs/operations.md#warm-up-at-start; default 0: none)")
    int warmUp;

    /** The warm-up's statements, checked: 0..{@value #MAX_WARM_UP}. */
    int warmUp(CommandLine.Model.CommandSpec spec) {
      if (warmUp < 0 || warmUp > MAX_WARM_UP) {
        throw new CommandLine.ParameterException(spec.commandLine(),
            "--warm-up: " + warmUp + " (expected: 0.." + MAX_WARM_UP + ")");
      }
      return warmUp;
    }

    OpsSettings settings(Path configFile) throws ConfigException {
      return OpsSettings.read(configFile)
          .withOverrides(metricsHost, metricsPort, logLevel, logFormat, drainNoticeMs);
    }

    /**
     * Logging before the configuration is read: the command line's choices alone, each checked
     * first as a usage error (exit 64) naming its option, not the file's field.
     */
    void earlyLogging(CommandLine.Model.CommandSpec spec) {
      OpsSettings s;
      try {
        s = OpsSettings.defaults()
            .withOverrides(metricsHost, metricsPort, logLevel, logFormat, drainNoticeMs);
      } catch (ConfigException e) {
        String message = e.getMessage();
        for (Map.Entry<String, String> f : FLAGS.entrySet()) {
          if (message.startsWith(f.getKey() + ":")) {
            message = f.getValue() + message.substring(f.getKey().length());
          }
        }
        throw new CommandLine.ParameterException(spec.commandLine(), message);
      }
      LogSetup.apply(s.logLevel(), s.logFormat());
    }

    /** The file's field each option overrides. */
    private static final Map<String, String> FLAGS = Map.of("ops.log.level", "--log-level",
        "ops.log.format", "--log-format", "ops.metrics.host", "--metrics-host",
        "ops.metrics.port", "--metrics-port", "ops.drain_notice_ms", "--drain-notice-ms");
  }

  @Command(name = "run", mixinStandardHelpOptions = true,
      description = "Serve the deployment configured in FILE.")
  static final class Run implements Callable<Integer> {
    @Mixin ConfigFile config = new ConfigFile();
    @Mixin OpsOptions ops = new OpsOptions();
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
      int warmUp = ops.warmUp(spec);
      ops.earlyLogging(spec);
      return serve(config.path, System.out, false, null, ops, warmUp);
    }
  }

  @Command(name = "demo", mixinStandardHelpOptions = true,
      description = "First run: generate demo data, keys and credentials; then serve them.")
  static final class Demo implements Callable<Integer> {
    @Option(names = "--state-dir", paramLabel = "DIR", defaultValue = ".state/demo",
        description = "the demo's state directory (default: ${DEFAULT-VALUE})")
    Path stateDir;
    @Option(names = "--port", paramLabel = "N",
        description = "the listener's port, 0 for any (default: the demo config's, first 31337)")
    Integer port;
    @Mixin OpsOptions ops = new OpsOptions();
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
      ops.earlyLogging(spec);
      if (port != null && (port < 0 || port > 65535)) {
        throw new CommandLine.ParameterException(spec.commandLine(),
            "--port: " + port + " (expected: 0..65535)");
      }
      int warmUp = ops.warmUp(spec);
      // An explicit --port wins over the port the demo config was first written with.
      return serve(DemoSetup.ensure(stateDir, port != null ? port : 31337), System.out, true,
          port, ops, warmUp);
    }
  }

  private static void refused(GatewayServer server, Logger log, RuntimeException e) {
    server.operations().metrics().reloaded(false);
    log.warn("reload refused, previous configuration stays: {}", e.toString());
  }

  private static int serve(Path configFile, PrintStream out, boolean demo, Integer port,
      OpsOptions options, int warmUp) throws ConfigException, IOException, InterruptedException {
    Logger log = LoggerFactory.getLogger(Main.class);
    OpsSettings settings = options.settings(configFile);
    LogSetup.apply(settings.logLevel(), settings.logFormat());
    // SIGHUP's handler first: the JVM's own would end the process (exit 129) on a `systemctl
    // reload` during a start, which can take minutes. (SIGTERM keeps the JVM's handler until the
    // gateway serves: nothing needs a drain yet, and a stop is not held up by a start.)
    Reloads reloads = new Reloads(server -> {
      try {
        OpsSettings next = options.settings(configFile);
        next.requireFixedAsIn(server.operations().settings());
        server.reload(load(configFile, port));
        LogSetup.apply(next.logLevel(), next.logFormat());
        server.operations().metrics().reloaded(true);
      } catch (ConfigException e) {
        server.operations().metrics().reloaded(false);
        log.warn("reload refused, previous configuration stays: {}", e.getMessage());
      } catch (GatewayException e) {
        if (e.kind() != Cause.UNKNOWN_OUTCOME) {
          refused(server, log, e);
          return;
        }
        // Nothing was swapped here, but every replica (this one from its next call) decides
        // under the journal's rights, which may now be the file's.
        server.operations().metrics().reloadUnknown();
        log.warn("reload outcome unknown, the journal may hold the new rights; send SIGHUP"
            + " again: {}", e.toString());
      } catch (RuntimeException e) {
        // An unexpected failure must not escape the signal thread silently: the running
        // configuration stays (nothing is swapped before the new snapshot is complete).
        refused(server, log, e);
      }
    });
    String noReloads = Signals.onHangup(reloads::requested);
    ResolvedConfig cfg = load(configFile, port);
    // A missing data file is a configuration error (exit 2), said before the engine opens.
    DataFiles.requireReadable(cfg);
    // So is a TLS certificate or key the listener would refuse: before the warm-up, the engine's
    // open and the rights' commit to a journal other replicas decide under.
    Listeners.checkTls(cfg);
    // Before the configured gateway binds its port: callers never meet the scratch one.
    StartWarm.run(warmUp, settings,
        () -> LogSetup.applyDiscarding(settings.logLevel(), settings.logFormat()),
        () -> LogSetup.apply(settings.logLevel(), settings.logFormat()));
    // Test-only: empty unless the environment explicitly names faults (see TestFaults).
    GatewayHooks hooks = TestFaults.fromEnvironment(System.getenv())
        .<GatewayHooks>map(f -> f).orElse(GatewayHooks.NONE);
    GatewayServer server = GatewayServer.start(cfg, hooks, new Operations(settings));
    CountDownLatch stopRequested = new CountDownLatch(1);
    // Any other JVM exit still drains (close is idempotent), and no reload runs once it began.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.operations().stopRequested();
      reloads.stopping();
      server.close();
    }, "transit-shutdown"));
    Signals.onTerminate(stopRequested::countDown);
    if (noReloads != null) {
      log.warn(noReloads);
    }
    reloads.serving(server);
    // The lines logged while starting (the metrics listener's port) come before the notice.
    LogSetup.flush();
    ConnectionHelp.print(out, cfg, server.port(), configFile, demo);
    // Only now is the class-data-sharing archive this JVM may write at its exit worth mapping.
    CdsArchive.markServing(System.getProperty(CdsArchive.CLAIM));
    stopRequested.await();
    // NOT_SERVING before waiting for a reload under way, which can wait for the journal.
    server.operations().stopRequested();
    reloads.stopping();
    server.close();
    // A leak or an undrained stream at shutdown is a defect worth a failing exit status.
    return server.closedCleanly() ? OK : UNCLEAN;
  }

  static ResolvedConfig load(Path configFile, Integer port) throws ConfigException {
    ResolvedConfig cfg = new ConfigLoader().load(configFile);
    return port == null ? cfg : cfg.withPort(port);
  }
}
