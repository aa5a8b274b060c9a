package io.transit.flight.server.cli;

import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.GatewayHooks;
import io.transit.flight.server.testing.TestFaults;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateLock;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * The daemon's command line.
 *
 * <pre>
 *   gateway run --config FILE          serve the deployment in FILE
 *   gateway demo [--state-dir DIR] [--port N]
 *                                      first run: generate demo data, keys and credentials; serve
 *   gateway check-config --config FILE validate FILE (and the state directory's secrets)
 * </pre>
 *
 * <p>SIGTERM (and Ctrl-C) drain and stop; SIGHUP reloads credentials and rights from the same
 * file — a bad file is refused and the running configuration stays.
 */
public final class Main {
  private Main() {}

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
    poolWholeBatches();
    int code;
    try {
      code = run(args, System.out);
    } catch (StateLock.StateDirectoryBusyException e) {
      System.err.println("transit-flight: " + e.getMessage());
      code = 2;
    } catch (ConfigException e) {
      System.err.println("transit-flight: configuration refused: " + e.getMessage());
      code = 2;
    } catch (IOException e) {
      System.err.println("transit-flight: " + e.getMessage());
      code = 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      code = 1;
    }
    System.exit(code);
  }

  static int run(String[] args, PrintStream out)
      throws ConfigException, IOException, InterruptedException {
    if (args.length == 0) {
      return usage();
    }
    String config = option(args, "--config", null);
    switch (args[0]) {
      case "run" -> {
        if (config == null) {
          return usage();
        }
        return serve(Path.of(config), out, false, null);
      }
      case "demo" -> {
        Path stateDir = Path.of(option(args, "--state-dir", ".state/demo"));
        String portOption = option(args, "--port", null);
        int port = portOption != null ? Integer.parseInt(portOption) : 31337;
        // An explicit --port wins over the port the demo config was first written with.
        return serve(DemoSetup.ensure(stateDir, port), out, true,
            portOption != null ? port : null);
      }
      case "check-config" -> {
        if (config == null) {
          return usage();
        }
        new ConfigLoader().load(Path.of(config));
        out.println("configuration ok: " + config);
        return 0;
      }
      default -> {
        return usage();
      }
    }
  }

  private static int serve(Path configFile, PrintStream out, boolean demo, Integer port)
      throws ConfigException, IOException, InterruptedException {
    ResolvedConfig cfg = load(configFile, port);
    // Test-only: empty unless the environment explicitly names faults (see TestFaults).
    GatewayHooks hooks = TestFaults.fromEnvironment(System.getenv())
        .<GatewayHooks>map(f -> f).orElse(GatewayHooks.NONE);
    GatewayServer server = GatewayServer.start(cfg, hooks);
    CountDownLatch stopRequested = new CountDownLatch(1);
    // Any other JVM exit still drains (close is idempotent).
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "transit-shutdown"));
    Signals.onTerminate(stopRequested::countDown);
    Signals.onHangup(() -> {
      try {
        server.reload(load(configFile, port));
      } catch (ConfigException e) {
        System.err.println("transit-flight: reload refused, previous configuration stays: "
            + e.getMessage());
      } catch (RuntimeException e) {
        // An unexpected failure must not escape the signal thread silently: the running
        // configuration stays (nothing is swapped before the new snapshot is complete).
        System.err.println("transit-flight: reload refused, previous configuration stays: "
            + e);
      }
    });
    ConnectionHelp.print(out, cfg, server.port(), configFile, demo);
    stopRequested.await();
    server.close();
    // A leak or an undrained stream at shutdown is a defect worth a failing exit status.
    return server.closedCleanly() ? 0 : 3;
  }

  private static ResolvedConfig load(Path configFile, Integer port) throws ConfigException {
    ResolvedConfig cfg = new ConfigLoader().load(configFile);
    return port == null ? cfg : cfg.withPort(port);
  }

  private static String option(String[] args, String name, String fallback) {
    for (int i = 1; i < args.length - 1; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return fallback;
  }

  private static int usage() {
    System.err.println("usage: gateway run --config FILE | gateway demo [--state-dir DIR] "
        + "[--port N] | gateway check-config --config FILE");
    return 64;
  }
}
