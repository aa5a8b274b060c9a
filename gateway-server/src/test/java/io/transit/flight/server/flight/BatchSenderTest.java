package io.transit.flight.server.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.StreamExecutorPool;
import io.transit.flight.channel.StreamLimits;
import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The one hand-off every DoGet batch takes, over a real Flight server and client on loopback, a
 * real stream registry and real allocators: accepted batches arrive in order; a batch refused by
 * the budget or by the authorization recheck is never disclosed, the stream ends with the
 * refusal's status after the batches already sent, and no byte is left allocated.
 */
class BatchSenderTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final int ROWS = 100;

  /** The producer script of one DoGet: builds {@code batches} batches and sends each. */
  private volatile int batches;
  private volatile long budgetBytes;
  private volatile BatchSender.Recheck recheck;

  private final ErrorMapper errors = new ErrorMapper();
  private final FlightOutboundHandler handler = new FlightOutboundHandler();
  private BufferAllocator gatewayRoot;
  private BufferAllocator flightAllocator;
  private StreamRegistry registry;
  private ExecutorService producers;
  private FlightServer server;
  private FlightClient client;

  @BeforeEach
  void start() throws Exception {
    gatewayRoot = new RootAllocator(64L << 20);
    flightAllocator = new RootAllocator(64L << 20);
    registry = new StreamRegistry(gatewayRoot, new StreamExecutorPool("t-exec", 2),
        new StreamLimits(4, 16L << 20, WAIT, 2));
    producers = Executors.newFixedThreadPool(2);
    server = FlightServer.builder(flightAllocator, Location.forGrpcInsecure("127.0.0.1", 0),
        new NoOpFlightProducer() {
          @Override
          public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            var channel = registry.open(listener, errors::toGrpc);
            BatchSender sender = new BatchSender(handler, channel,
                new ResponseBudget(budgetBytes), recheck);
            producers.execute(() -> handler.produce(channel, ch -> {
              for (int i = 0; i < batches; i++) {
                sender.send(batch(ch.allocator(), i));
              }
            }));
          }
        }).build().start();
    client = FlightClient.builder(flightAllocator,
        Location.forGrpcInsecure("127.0.0.1", server.getPort())).build();
  }

  @AfterEach
  void stop() throws Exception {
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

  /** Rows {@code index * ROWS ..} of a one-column BIGINT batch, built in {@code allocator}. */
  private static VectorSchemaRoot batch(BufferAllocator allocator, int index) {
    BigIntVector v = new BigIntVector("v", allocator);
    v.allocateNew(ROWS);
    for (int i = 0; i < ROWS; i++) {
      v.set(i, (long) index * ROWS + i);
    }
    v.setValueCount(ROWS);
    return VectorSchemaRoot.of(v);
  }

  private static long bytesOfOneBatch() {
    try (BufferAllocator a = new RootAllocator(); VectorSchemaRoot b = batch(a, 0)) {
      return ResponseBudget.bytesOf(b);
    }
  }

  /** Reads the whole stream: the first values of the batches seen, and the failure if any. */
  private record Seen(long[] firsts, FlightRuntimeException error) {}

  private Seen read() throws Exception {
    long[] firsts = new long[16];
    int n = 0;
    try (FlightStream s = client.getStream(new Ticket(new byte[] {1}),
        CallOptions.timeout(WAIT.toSeconds(), TimeUnit.SECONDS))) {
      while (s.next()) {
        firsts[n++] = ((BigIntVector) s.getRoot().getVector(0)).get(0);
      }
      return new Seen(java.util.Arrays.copyOf(firsts, n), null);
    } catch (FlightRuntimeException e) {
      return new Seen(java.util.Arrays.copyOf(firsts, n), e);
    }
  }

  @Test
  void acceptedBatchesArriveInOrderAndTheStreamCompletes() throws Exception {
    batches = 3;
    budgetBytes = 3 * bytesOfOneBatch();
    recheck = () -> {};
    Seen seen = read();
    assertNull(seen.error());
    assertEquals(3, seen.firsts().length);
    assertEquals(0, seen.firsts()[0]);
    assertEquals(ROWS, seen.firsts()[1]);
    assertEquals(2 * ROWS, seen.firsts()[2]);
  }

  @Test
  void batchRefusedByTheBudgetIsNeverSentAndTheStreamFails() throws Exception {
    batches = 3;
    budgetBytes = bytesOfOneBatch(); // exactly one batch fits
    recheck = () -> {};
    Seen seen = read();
    assertEquals(1, seen.firsts().length, "only the batch within the budget is disclosed");
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, seen.error().status().code());
  }

  @Test
  void batchRefusedByTheRecheckAtHandOffIsNeverSentAndTheStreamFails() throws Exception {
    batches = 3;
    budgetBytes = 3 * bytesOfOneBatch();
    AtomicInteger checks = new AtomicInteger();
    recheck = () -> {
      if (checks.incrementAndGet() == 2) {
        throw GatewayException.of(Cause.ACCESS_DENIED, "access.read_revoked",
            "the caller's read right was revoked");
      }
    };
    Seen seen = read();
    assertEquals(1, seen.firsts().length, "the batch held across the revocation is not disclosed");
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code());
    assertEquals(2, checks.get(), "the producer stopped at the refusal");
  }
}
