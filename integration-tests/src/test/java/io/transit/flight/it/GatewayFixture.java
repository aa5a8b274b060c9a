package io.transit.flight.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.cli.DemoSetup;
import io.transit.flight.server.config.ConfigLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/** The real daemon on loopback over a demo state directory, and Java clients for it. */
final class GatewayFixture implements AutoCloseable {
  final Path stateDir;
  GatewayServer server;
  final BufferAllocator clientAllocator = new RootAllocator();

  /**
   * The daemon over {@code stateDir}: the demo deployment, written there first when absent. The
   * caller owns the directory (a JUnit {@code @TempDir}, removed with its keys and credentials).
   */
  GatewayFixture(Path stateDir) throws Exception {
    this.stateDir = stateDir;
    start();
  }

  /**
   * As {@link #GatewayFixture(Path)}, with the demo configuration (gateway.json) edited by {@code
   * edit} before the daemon loads it, e.g. to shorten a limit.
   */
  GatewayFixture(Path stateDir,
      java.util.function.Consumer<com.fasterxml.jackson.databind.node.ObjectNode> edit)
      throws Exception {
    this.stateDir = stateDir;
    Path config = DemoSetup.ensure(stateDir, 0);
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    var root = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(config.toFile());
    edit.accept(root);
    json.writeValue(config.toFile(), root);
    start();
  }

  void start() throws Exception {
    server = GatewayServer.start(new ConfigLoader().load(DemoSetup.ensure(stateDir, 0)));
  }

  FlightSqlClient client() {
    return new FlightSqlClient(FlightClient.builder(clientAllocator,
        Location.forGrpcInsecure("127.0.0.1", server.port())).build());
  }

  String token(String caller) throws Exception {
    return Files.readString(stateDir.resolve("credentials/" + caller + ".token"),
        StandardCharsets.US_ASCII).strip();
  }

  CallOption[] as(String caller, Long sequence) throws Exception {
    FlightCallHeaders h = new FlightCallHeaders();
    h.insert("authorization", "Bearer " + token(caller));
    if (sequence != null) {
      h.insert("x-transit-request-sequence", Long.toUnsignedString(sequence));
    }
    return new CallOption[] {new HeaderCallOption(h), CallOptions.timeout(60, TimeUnit.SECONDS)};
  }

  /**
   * Every stream's channel has closed and its child allocator is empty and closed: waits (bounded)
   * for the asynchronous root free, then asserts the gateway's root allocator holds nothing.
   */
  void assertNoStreamMemory() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline
        && (server.streams().liveStreams() != 0 || server.allocator().getAllocatedMemory() != 0)) {
      Thread.sleep(10);
    }
    assertEquals(0, server.streams().liveStreams(), "live streams");
    assertEquals(0, server.streams().leakedStreams(), "streams that leaked");
    assertEquals(0, server.allocator().getAllocatedMemory(), "bytes held by the gateway allocator");
  }

  @Override
  public void close() throws Exception {
    server.close();
    assertEquals(true, server.closedCleanly(), "the daemon drained every stream and freed every byte");
    clientAllocator.close();
  }
}
