package io.transit.flight.server.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.StreamExecutorPool;
import io.transit.flight.channel.StreamLimits;
import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.diagnostic.ErrorMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.util.Text;

/**
 * A real Flight server and client on 127.0.0.1 (port 0) whose DoGet opens a stream in a real
 * {@link StreamRegistry} over the gateway's allocator and runs the test's producer body inside
 * {@link FlightOutboundHandler#produce} on a T_caller pool, as the gateway's producer does.
 * {@link #close} drains everything and fails the test on any leaked stream or byte.
 */
public final class LoopbackStreams implements AutoCloseable {
  public static final Duration WAIT = Duration.ofSeconds(20);

  /**
   * What the client saw: the first cell of each batch (a {@code Long} or a {@code String}; null
   * for an empty batch), the rows in all, their Arrow buffer bytes as the response budget counts
   * them, and the failure, if any.
   */
  public record Seen(List<Object> firsts, long rows, long bytes, FlightRuntimeException error) {
    /** The failure's Diagnostic v1 trailer; fails the test when there is no failure or trailer. */
    public JsonNode diagnostic() throws IOException {
      assertNotNull(error, "the stream failed");
      return LoopbackStreams.diagnostic(error);
    }
  }

  /** The Diagnostic v1 trailer {@code e} carries; fails the test when it has none. */
  public static JsonNode diagnostic(FlightRuntimeException e) throws IOException {
    byte[] trailer = e.status().metadata().getByte(ErrorMapper.TRAILER_KEY);
    assertNotNull(trailer, "the failure carries the diagnostic trailer");
    return new ObjectMapper().readTree(trailer);
  }

  /** The value of the fact {@code name} in diagnostic {@code d}, or null. */
  public static String fact(JsonNode d, String name) {
    for (JsonNode f : d.get("facts")) {
      if (name.equals(f.get("name").asText())) {
        return f.get("value").asText();
      }
    }
    return null;
  }

  public final BufferAllocator gatewayRoot = new RootAllocator(64L << 20);
  public final FlightOutboundHandler handler = new FlightOutboundHandler();
  private final BufferAllocator flightAllocator = new RootAllocator(64L << 20);
  private final ErrorMapper errors = new ErrorMapper();
  private final StreamRegistry registry = new StreamRegistry(gatewayRoot,
      new StreamExecutorPool("t-exec", 2), new StreamLimits(4, 16L << 20, WAIT, 2));
  private final ExecutorService producers = Executors.newFixedThreadPool(2);
  private final FlightServer server;
  private final FlightClient client;
  /** The body the next DoGet runs; set by the test before it reads. */
  private volatile FlightOutboundHandler.ProducerBody body = channel -> {};

  public LoopbackStreams() throws Exception {
    server = FlightServer.builder(flightAllocator, Location.forGrpcInsecure("127.0.0.1", 0),
        new NoOpFlightProducer() {
          @Override
          public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            var channel = registry.open(listener, errors::toGrpc);
            FlightOutboundHandler.ProducerBody run = body;
            producers.execute(() -> handler.produce(channel, run));
          }
        }).build().start();
    client = FlightClient.builder(flightAllocator,
        Location.forGrpcInsecure("127.0.0.1", server.getPort())).build();
  }

  /** Runs {@code producer} for one DoGet and reads the whole stream. */
  public Seen read(FlightOutboundHandler.ProducerBody producer) throws Exception {
    body = producer;
    List<Object> firsts = new ArrayList<>();
    long rows = 0;
    long bytes = 0;
    try (FlightStream s = client.getStream(new Ticket(new byte[] {1}),
        CallOptions.timeout(WAIT.toSeconds(), TimeUnit.SECONDS))) {
      while (s.next()) {
        VectorSchemaRoot root = s.getRoot();
        rows += root.getRowCount();
        bytes += ResponseBudget.bytesOf(root);
        Object first = root.getRowCount() == 0 ? null : root.getVector(0).getObject(0);
        firsts.add(first instanceof Text t ? t.toString() : first);
      }
      return new Seen(firsts, rows, bytes, null);
    } catch (FlightRuntimeException e) {
      return new Seen(firsts, rows, bytes, e);
    }
  }

  @Override
  public void close() throws Exception {
    client.close();
    server.close();
    producers.shutdown();
    assertTrue(producers.awaitTermination(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(registry.shutdown(WAIT), "stream writers drained");
    assertEquals(0, registry.leakedStreams());
    assertEquals(0, gatewayRoot.getAllocatedMemory(), "gateway bytes left");
    gatewayRoot.close();
    flightAllocator.close();
  }
}
