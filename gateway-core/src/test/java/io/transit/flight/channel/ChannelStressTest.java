package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.WAIT;
import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.junit.jupiter.api.Test;

/**
 * Randomized interleavings of send, complete, error, close and cancel from the three thread
 * classes (T_caller producer, T_exec pool, T_grpc cancel delivery) plus a bootstrap/transport
 * thread that closes and registers close listeners, over a real Flight server and client.
 * {@code -Dchannel.stress.iterations=N} raises the count; {@code -Dchannel.stress.seed=S}
 * replays a run.
 */
class ChannelStressTest {

  private static void pauseMicros(int micros) {
    if (micros > 0) {
      LockSupport.parkNanos(micros * 1_000L);
    }
  }

  @Test
  void randomizedInterleavingsKeepEveryInvariant() throws Exception {
    int iterations = Integer.getInteger("channel.stress.iterations", 1000);
    long seed = Long.getLong("channel.stress.seed", System.nanoTime());
    Random rnd = new Random(seed);
    ExecutorService others = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "bootstrap");
      t.setDaemon(true);
      return t;
    });
    StreamLimits limits = new StreamLimits(8, 64L << 20, Duration.ofSeconds(10), 2);
    long started = System.nanoTime();
    int cancelled = 0;
    int externallyClosed = 0;
    int clientErrors = 0;
    int hangs = 0;
    long leakedStreams;
    long leakedBytes;
    try (FlightFixture fx = new FlightFixture(2, limits)) {
      for (int i = 0; i < iterations; i++) {
        String where = "seed " + seed + ", iteration " + i;
        int batches = rnd.nextInt(5);
        boolean failAtEnd = rnd.nextInt(4) == 0;
        int cancelAfter = rnd.nextInt(3) == 0 ? rnd.nextInt(batches + 1) : -1;
        boolean externalClose = rnd.nextInt(5) == 0;
        boolean lateListener = rnd.nextBoolean();
        int[] producerPauses = rnd.ints(batches + 1, 0, 300).toArray();
        int closePause = rnd.nextInt(800);
        int listenerPause = rnd.nextInt(800);

        fx.script = side -> {
          FlightServerChannel ch = side.channel;
          for (int b = 0; b < batches; b++) {
            pauseMicros(producerPauses[b]);
            String md = "m" + b;
            fx.handler.sendResponseBatch(ch, batch(ch.allocator(), b + 1),
                (b & 1) == 0 ? () -> ByteBuffer.wrap(md.getBytes(StandardCharsets.UTF_8)) : null);
          }
          pauseMicros(producerPauses[batches]);
          if (failAtEnd) {
            fx.handler.sendError(ch, new GatewayException(Cause.INVALID_REQUEST, "query.invalid_plan", "bad"));
          } else {
            fx.handler.completeStream(ch);
          }
        };

        FlightStream stream = fx.stream();
        FlightFixture.ServerSide side = fx.nextOpened();
        AtomicInteger lateFires = new AtomicInteger();
        Future<?> closer = externalClose
            ? others.submit(() -> { pauseMicros(closePause); side.channel.close(); })
            : null;
        Future<?> adder = lateListener
            ? others.submit(() -> {
                pauseMicros(listenerPause);
                side.channel.addCloseListener(lateFires::incrementAndGet);
              })
            : null;
        if (cancelAfter == 0) {
          stream.cancel("stress cancel", null);
        }
        FlightFixture.ClientResult result = FlightFixture.read(stream, cancelAfter);
        if (result.error() != null) {
          clientErrors++;
          // The client's call deadline is the hang bound: reaching it means the stream never ended.
          if (result.error().status().code() == FlightStatusCode.TIMED_OUT) {
            hangs++;
          }
        }
        assertEquals(0, hangs, "the client side ended before its deadline: " + where);
        // read() cancels once cancelAfter batches arrived; 0 means cancelled before reading.
        cancelled += cancelAfter == 0 || (cancelAfter > 0 && result.batches() >= cancelAfter) ? 1 : 0;
        externallyClosed += externalClose ? 1 : 0;
        if (closer != null) {
          closer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
        if (adder != null) {
          adder.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
        fx.awaitQuiet();
        // A cancel closes the channel on T_grpc, which runs the close listeners in order: the
        // registry's release may finish on T_exec before T_grpc reaches the test's listeners.
        FlightFixture.awaitTrue(() -> side.closeFires.get() >= 1
            && (!lateListener || lateFires.get() >= 1), "close listeners ran: " + where);

        InterceptingListener l = side.listener;
        assertEquals(1, side.closeFires.get(), "close listeners fired once: " + where);
        if (lateListener) {
          assertEquals(1, lateFires.get(), "racing registration fired once: " + where);
        }
        assertTrue(l.terminalOps() <= 1, "at most one terminal op: " + where);
        assertEquals(0, l.opsAfterCancel.get(), "no op after cancel: " + where);
        assertEquals(0, l.opsOffExecutor.get(), "listener only on T_exec: " + where);
        assertEquals(0, fx.gatewayRoot.getAllocatedMemory(), "zero bytes: " + where);
        assertEquals(0, fx.registry.leakedStreams(), "no leaked stream: " + where);
        // The lease released exactly once: one release per stream, every permit back, none extra.
        assertEquals(i + 1, fx.registry.releasedStreams(), "one release per stream: " + where);
        assertEquals(limits.maxLiveStreams(), fx.registry.availablePermits(), "permits: " + where);
        assertTrue(side.producerFailure == null || side.producerFailure instanceof GatewayException,
            "producer saw only channel failures: " + side.producerFailure + " at " + where);
        if (cancelAfter < 0) {
          assertEquals(1, l.terminalOps(), "a call that was not cancelled ends once: " + where);
          assertOutcome(result, batches, failAtEnd, externalClose, where);
        }
      }
      fx.awaitQuiet();
      leakedStreams = fx.registry.leakedStreams();
      leakedBytes = fx.gatewayRoot.getAllocatedMemory();
    } finally {
      others.shutdownNow();
    }
    // The figures docs/channel.md asks a stress run to report.
    System.out.printf(
        "ChannelStressTest: %d iterations (seed %d) in %.1f s: %d with a client cancel, %d closed from"
            + " outside, %d client-side errors; leaked streams: %d, leaked bytes: %d; hangs: %d%n",
        iterations, seed, (System.nanoTime() - started) / 1e9, cancelled, externallyClosed,
        clientErrors, leakedStreams, leakedBytes, hangs);
  }

  private static void assertOutcome(
      FlightFixture.ClientResult result, int batches, boolean failAtEnd, boolean externalClose, String where) {
    long allRows = (long) batches * (batches + 1) / 2;
    if (result.error() == null) {
      assertTrue(!failAtEnd, "a failed stream reported success: " + where);
      assertEquals(allRows, result.rows(), "complete stream delivers every row: " + where);
      return;
    }
    FlightStatusCode code = result.error().status().code();
    if (externalClose) {
      assertTrue(List.of(FlightStatusCode.UNAVAILABLE, FlightStatusCode.INVALID_ARGUMENT).contains(code),
          code + " at " + where);
    } else {
      assertTrue(failAtEnd, "unexpected error " + result.error() + " at " + where);
      assertEquals(FlightStatusCode.INVALID_ARGUMENT, code, where);
      assertEquals(allRows, result.rows(), where);
    }
  }
}
