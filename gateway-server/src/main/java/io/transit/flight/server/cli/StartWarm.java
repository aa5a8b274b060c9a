package io.transit.flight.server.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Any;
import com.google.protobuf.Message;
import io.transit.flight.server.GatewayHooks;
import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.auth.AuthInterceptor;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.ops.Operations;
import io.transit.flight.server.ops.OpsSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.sql.impl.FlightSql;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The warm-up at start ({@code --warm-up N}): before the configured gateway serves, a scratch
 * gateway serves {@code N} statements and as many GetTableTypes round trips to a Flight client in
 * this process, over loopback, so that the JIT has compiled the serving path (admission, the
 * journal's and the engine's Java side, signatures, the Flight and Netty code) before the first
 * caller comes. A statement is admitted under a principal's sequence and recorded in a journal,
 * so the warm-up cannot run on the configured deployment without leaving its rows there: the
 * scratch gateway runs the demo deployment ({@link DemoSetup}: generated data, keys and
 * credentials) in a temporary directory of its own, deleted afterwards. Nothing of it touches the
 * configured state, and a warm-up that fails is logged and skipped: the configured gateway starts
 * either way.
 *
 * <p>Threads: {@link #run} is called on the main thread before the configured gateway starts;
 * the scratch gateway's threads end with its {@code close}. The client's allocator is this
 * class's, closed (empty) before it returns.
 */
final class StartWarm {
  private static final Logger log = LoggerFactory.getLogger(StartWarm.class);
  /** The demo Table the statements read (DemoData's one-million-row Table). */
  private static final String CALLER = "primitive";
  /** Aggregates and a filter: the shapes of small interactive statements. */
  private static final String[] SQL = {
    "SELECT COUNT(*) FROM primitive",
    "SELECT SUM(a) FROM primitive WHERE a < 1000",
  };
  /** Any one call of the warm-up; a statement on a cold JVM takes tens of milliseconds. */
  private static final long CALL_SECONDS = 60;

  private StartWarm() {}

  /**
   * What a warm-up did: the statements it served (each with its round trip), how long it took,
   * and why it stopped early (null when it served all it was asked).
   */
  record Result(int served, long millis, String failure) {}

  /**
   * Serves {@code statements} statements and round trips from a scratch gateway (see above) and
   * logs, at the end, what it did or why it stopped. The scratch gateway's own log lines (its
   * listening notice, an access line a call) are not the operator's, but writing them is part of
   * the serving path to compile: {@code quietLogging} keeps the configured level and format and
   * drops every line but errors, then {@code restoreLogging} puts the configured output back.
   * The scratch gateway runs the configured operations settings ({@code ops}: the access log on
   * or off, as configured) without their metrics listener, whose port is the served gateway's.
   */
  static Result run(int statements, OpsSettings ops, Runnable quietLogging,
      Runnable restoreLogging) {
    if (statements <= 0) {
      return new Result(0, 0, null);
    }
    long started = System.nanoTime();
    Path scratch = null;
    Thread removeAtExit = null;
    String failure = null;
    int[] served = {0}; // this thread only
    quietLogging.run();
    try {
      scratch = Files.createTempDirectory("transit-warm-");
      // A SIGTERM during the warm-up (a stop while starting) exits through the JVM's own
      // handler, past the finally below: the hook stops the scratch gateway (nothing writes
      // into its state any more) and removes the scratch state then.
      Path dir = scratch;
      AtomicReference<GatewayServer> running = new AtomicReference<>();
      removeAtExit = new Thread(() -> {
        GatewayServer g = running.get();
        if (g != null) {
          g.close(); // idempotent: this thread's finally may close it too
        }
        delete(dir);
      }, "transit-warm-cleanup");
      Runtime.getRuntime().addShutdownHook(removeAtExit);
      ResolvedConfig cfg = Main.load(DemoSetup.ensure(scratch, 0), 0);
      GatewayServer gateway = GatewayServer.start(cfg, GatewayHooks.NONE,
          new Operations(scratchOps(ops)));
      running.set(gateway);
      try {
        drive(gateway.port(), token(cfg), statements, served);
      } finally {
        gateway.close();
      }
      if (!gateway.closedCleanly()) {
        // A defect the configured gateway would share: worth the operator's attention.
        failure = "the scratch gateway did not close cleanly (a buffer or a stream was left)";
      }
    } catch (IOException | ConfigException | RuntimeException e) {
      failure = e.toString();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = "interrupted";
    } finally {
      if (scratch != null) {
        delete(scratch);
      }
      if (removeAtExit != null) {
        try {
          Runtime.getRuntime().removeShutdownHook(removeAtExit);
        } catch (IllegalStateException exiting) {
          // The JVM is exiting: the hook runs, and finds nothing left.
        }
      }
      restoreLogging.run();
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    if (failure == null) {
      log.info("warm-up: {} statements and {} round trips on a scratch gateway in {} ms",
          served[0], served[0], millis);
    } else {
      log.warn("warm-up stopped after {} statements and {} ms, the gateway starts anyway: {}",
          served[0], millis, failure);
    }
    return new Result(served[0], millis, failure);
  }

  /** {@code configured} without a metrics listener, and closing without a drain notice. */
  static OpsSettings scratchOps(OpsSettings configured) {
    return new OpsSettings(configured.metricsHost(), null, configured.logLevel(),
        configured.logFormat(), configured.accessLog(), 0);
  }

  /** The demo caller's credential, from the file its configuration names (written at start). */
  private static String token(ResolvedConfig cfg) throws IOException {
    Path file = cfg.callers().stream().filter(c -> c.name().equals(CALLER)).findFirst()
        .orElseThrow(() -> new IOException("the demo deployment has no caller " + CALLER))
        .credentialFile();
    return Files.readString(file, StandardCharsets.US_ASCII).strip();
  }

  private static void drive(int port, String token, int statements, int[] served)
      throws InterruptedException, IOException {
    ObjectMapper json = new ObjectMapper();
    try (BufferAllocator allocator = new RootAllocator();
        FlightClient client = FlightClient.builder(allocator,
            Location.forGrpcInsecure("127.0.0.1", port)).build()) {
      FlightDescriptor tableTypes =
          command(FlightSql.CommandGetTableTypes.getDefaultInstance());
      long sequence = 1; // a fresh journal's first; each statement's answer names the next
      for (int i = 0; i < statements; i++) {
        if (Thread.interrupted()) {
          throw new InterruptedException();
        }
        FlightInfo info = client.getInfo(
            command(FlightSql.CommandStatementQuery.newBuilder()
                .setQuery(SQL[i % SQL.length]).build()),
            as(token, Long.toUnsignedString(sequence)));
        sequence = Long.parseUnsignedLong(
            json.readTree(info.getAppMetadata()).get("next_sequence").asText());
        read(client, info, token);
        read(client, client.getInfo(tableTypes, as(token)), token);
        served[0]++;
      }
    }
  }

  private static void read(FlightClient client, FlightInfo info, String token) throws IOException {
    try (FlightStream s = client.getStream(info.getEndpoints().get(0).getTicket(), as(token))) {
      while (s.next()) {
        // Reading the batches is the work: their contents are the demo's.
      }
    } catch (Exception e) {
      throw e instanceof IOException io ? io : new IOException(e);
    }
  }

  private static CallOption[] as(String token, String... sequence) {
    FlightCallHeaders headers = new FlightCallHeaders();
    headers.insert("authorization", "Bearer " + token);
    Arrays.stream(sequence).forEach(s -> headers.insert(AuthInterceptor.SEQUENCE_HEADER, s));
    return new CallOption[] {
      new HeaderCallOption(headers), CallOptions.timeout(CALL_SECONDS, TimeUnit.SECONDS)
    };
  }

  private static FlightDescriptor command(Message m) {
    return FlightDescriptor.command(Any.pack(m).toByteArray());
  }

  /**
   * Removes the scratch directory; what cannot be removed is logged, not thrown. Walked again
   * when a file appeared or vanished meanwhile (a scratch gateway still opening or closing, or
   * the main thread and the exit hook removing it at once), at most five times.
   */
  private static void delete(Path dir) {
    Exception last = null;
    for (int walk = 0; walk < 5 && Files.exists(dir, LinkOption.NOFOLLOW_LINKS); walk++) {
      try (Stream<Path> all = Files.walk(dir)) {
        for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (IOException | UncheckedIOException e) {
        last = e;
      }
    }
    if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      log.warn("warm-up: could not remove {}: {}", dir, String.valueOf(last));
    }
  }
}
