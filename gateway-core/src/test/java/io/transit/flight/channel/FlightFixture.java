package io.transit.flight.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.grpc.StatusRuntimeException;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A real Arrow Flight server and client on 127.0.0.1 (port 0) whose DoGet opens a stream in a
 * real {@link StreamRegistry} and runs the test's producer script on a T_caller pool. Closing it
 * drains everything and fails the test on any leaked byte.
 */
final class FlightFixture implements AutoCloseable {
  static final Duration WAIT = Duration.ofSeconds(20);

  /** A producer body, run on a T_caller worker. */
  interface Script {
    void produce(ServerSide side) throws Exception;
  }

  /** What the server side of one DoGet did. */
  static final class ServerSide {
    final FlightServerChannel channel;
    final InterceptingListener listener;
    final AtomicInteger closeFires = new AtomicInteger();
    /** Runs of the registry's release callback: the permit and allocator returned. */
    final AtomicInteger releaseFires;
    volatile Throwable producerFailure;

    ServerSide(FlightServerChannel channel, InterceptingListener listener,
        AtomicInteger releaseFires) {
      this.channel = channel;
      this.listener = listener;
      this.releaseFires = releaseFires;
    }
  }

  /** What the client saw. */
  record ClientResult(long rows, int batches, List<String> metadata, FlightRuntimeException error) {}

  final BufferAllocator gatewayRoot = new RootAllocator(256L << 20);
  final BufferAllocator flightAllocator = new RootAllocator(256L << 20);
  final StreamExecutorPool pool;
  final StreamRegistry registry;
  final FlightOutboundHandler handler = new FlightOutboundHandler();
  final ExecutorService producers = Executors.newFixedThreadPool(4, r -> {
    Thread t = new Thread(r, "t-caller");
    t.setDaemon(true);
    return t;
  });
  final BlockingQueue<ServerSide> opened = new LinkedBlockingQueue<>();
  private final FlightServer server;
  private final FlightClient client;
  volatile Script script = side -> {};
  volatile Consumer<InterceptingListener> configure = l -> {};
  /** The next streams' call end (gRPC's onComplete or onCancel, as a server would pass it). */
  volatile CompletableFuture<Void> callEnded = CompletableFuture.completedFuture(null);
  /** The channel's error mapper; a test may give it one that fails. */
  volatile Function<Throwable, RuntimeException> mapper = ERRORS::toGrpc;

  FlightFixture(int execThreads, StreamLimits limits) throws Exception {
    pool = new StreamExecutorPool("t-exec", execThreads);
    registry = new StreamRegistry(gatewayRoot, pool, limits);
    server = FlightServer.builder(flightAllocator, Location.forGrpcInsecure("127.0.0.1", 0), new Producer())
        .build()
        .start();
    client = FlightClient.builder(flightAllocator, Location.forGrpcInsecure("127.0.0.1", server.getPort()))
        .build();
  }

  FlightFixture() throws Exception {
    this(2, limits(Duration.ofSeconds(10)));
  }

  static StreamLimits limits(Duration stall) {
    return new StreamLimits(8, 64L << 20, stall, 2);
  }

  /** The server's mapper: gRPC statuses with the diagnostic trailer, passed through by Arrow. */
  static final ErrorMapper ERRORS = new ErrorMapper();

  static StatusRuntimeException map(Throwable t) {
    return ERRORS.toGrpc(t);
  }

  /** A one-column BIGINT batch of {@code rows} rows in {@code allocator}. */
  static VectorSchemaRoot batch(BufferAllocator allocator, int rows) {
    BigIntVector v = new BigIntVector("v", allocator);
    v.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      v.set(i, i);
    }
    v.setValueCount(rows);
    return VectorSchemaRoot.of(v);
  }

  /** Starts a DoGet (bounded by a deadline) without reading it. */
  FlightStream stream() {
    return client.getStream(
        new Ticket(new byte[] {1}), CallOptions.timeout(WAIT.toSeconds(), TimeUnit.SECONDS));
  }

  /** Reads a whole stream; cancels after {@code cancelAfter} batches when it is >= 1. */
  ClientResult read(int cancelAfter) {
    return read(stream(), cancelAfter);
  }

  /** Reads {@code stream} to its end; cancels after {@code cancelAfter} batches when >= 1. */
  static ClientResult read(FlightStream stream, int cancelAfter) {
    long rows = 0;
    int batches = 0;
    List<String> metadata = new ArrayList<>();
    try {
      while (stream.next()) {
        rows += stream.getRoot().getRowCount();
        batches++;
        ArrowBuf md = stream.getLatestMetadata();
        if (md != null) {
          byte[] bytes = new byte[(int) md.capacity()];
          md.getBytes(0, bytes);
          metadata.add(new String(bytes, StandardCharsets.UTF_8));
        }
        if (batches == cancelAfter) {
          stream.cancel("test cancel", null);
        }
      }
      return new ClientResult(rows, batches, metadata, null);
    } catch (FlightRuntimeException e) {
      return new ClientResult(rows, batches, metadata, e);
    } finally {
      try {
        stream.close();
      } catch (Exception ignored) {
        // A cancelled or failed stream may report its status again on close.
      }
    }
  }

  ServerSide nextOpened() throws InterruptedException {
    ServerSide side = opened.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    if (side == null) {
      fail("no stream opened within " + WAIT);
    }
    return side;
  }

  /** Waits (bounded) until every stream is released and no executor task is pending. */
  void awaitQuiet() throws InterruptedException {
    awaitTrue(() -> registry.liveStreams() == 0 && pool.pendingTasks() == 0, "streams released");
  }

  /** Waits for {@code latch} at most {@link #WAIT}; a longer wait fails the test. */
  static void await(CountDownLatch latch) {
    try {
      if (!latch.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError("latch not released within " + WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for: " + what);
      }
      Thread.sleep(1);
    }
  }

  @Override
  public void close() throws Exception {
    try {
      awaitQuiet();
      assertEquals(0, registry.leakedStreams(), "leaked streams");
      assertEquals(0, gatewayRoot.getAllocatedMemory(), "gateway bytes after drain");
    } finally {
      client.close();
      server.close();
      assertTrue(registry.shutdown(WAIT), "registry shut down cleanly");
      producers.shutdownNow();
      producers.awaitTermination(WAIT.toSeconds(), TimeUnit.SECONDS);
      gatewayRoot.close();
      flightAllocator.close();
    }
  }

  private final class Producer extends NoOpFlightProducer {
    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener real) {
      InterceptingListener listener = new InterceptingListener(real);
      configure.accept(listener);
      FlightServerChannel channel;
      AtomicInteger releases = new AtomicInteger();
      try {
        channel = registry.open(listener, mapper, releases::incrementAndGet, callEnded);
      } catch (GatewayException e) {
        listener.error(map(e));
        return;
      }
      listener.attach(channel);
      ServerSide side = new ServerSide(channel, listener, releases);
      channel.addCloseListener(side.closeFires::incrementAndGet);
      Script body = script;
      opened.add(side);
      producers.execute(() -> {
        try {
          body.produce(side);
        } catch (Throwable t) {
          side.producerFailure = t;
          handler.sendError(channel, t);
        }
      });
    }
  }
}
