package io.transit.flight.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.cli.DemoSetup;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A start refused after the engine opened (a TLS certificate that is readable but not PEM, which
 * only the listener's build loads) stops everything it had started before it releases the state
 * directory: no engine, executor or writer thread outlives the refusal, and the same process
 * then starts on the same directory and serves.
 */
class StartFailureTest {
  /** Thread name prefixes of what the daemon's start creates (engine, pools, writers, timer). */
  private static final List<String> DAEMON_THREADS = List.of("native-", "transit-", "journal-");
  /** Started by logging, not by the daemon's start: it serves the whole process. */
  private static final String LOG_WRITER = "transit-log";

  @TempDir Path work;

  @Test
  void aRefusalAfterTheEngineOpenedStopsWhatItStartedAndTheDirectoryStartsAgain()
      throws Exception {
    Path state = work.resolve("state");
    Path config = DemoSetup.ensure(state, 0);
    Set<Thread> before = Thread.getAllStackTraces().keySet();

    Path cert = Files.writeString(work.resolve("edge.crt"), "not a certificate\n");
    Path key = Files.writeString(work.resolve("edge.key"), "not a key\n");
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
    ObjectMapper json = new ObjectMapper();
    ObjectNode root = (ObjectNode) json.readTree(config.toFile());
    ObjectNode tls = ((ObjectNode) root.get("listen")).putObject("tls");
    tls.put("cert_file", cert.toString());
    tls.put("key_file", key.toString());
    Path withTls = work.resolve("tls.json");
    json.writeValue(withTls.toFile(), root.put("state_dir", state.toString()));

    ConfigException refused = assertThrows(ConfigException.class,
        () -> GatewayServer.start(new ConfigLoader().load(withTls)));
    assertTrue(refused.getMessage().startsWith("listen.tls: cannot load certificate"),
        refused.getMessage());

    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    Set<String> left = started(before);
    while (!left.isEmpty() && System.nanoTime() - deadline < 0) {
      Thread.sleep(20);
      left = started(before);
    }
    assertEquals(Set.of(), left, "threads the refused start left running");

    try (GatewayFixture again = new GatewayFixture(state);
        FlightSqlClient client = again.client()) {
      FlightInfo info = client.getTableTypes(again.as("primitive", null));
      try (FlightStream s = client.getStream(info.getEndpoints().get(0).getTicket(),
          again.as("primitive", null))) {
        assertTrue(s.next());
        assertTrue(s.getRoot().getRowCount() > 0);
      }
    }
  }

  /** The names of live daemon threads not in {@code before}. */
  private static Set<String> started(Set<Thread> before) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && !before.contains(t))
        .map(Thread::getName)
        .filter(n -> DAEMON_THREADS.stream().anyMatch(n::startsWith) && !n.equals(LOG_WRITER))
        .collect(Collectors.toCollection(java.util.TreeSet::new));
  }
}
