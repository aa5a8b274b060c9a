package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.WAIT;
import static io.transit.flight.channel.FlightFixture.await;
import static io.transit.flight.channel.FlightFixture.awaitTrue;
import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/** The channel contract's scenarios S1–S10 over a real Flight server and client. */
class FlightServerChannelScenarioTest {

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static void assertEndedOnce(FlightFixture.ServerSide side) throws InterruptedException {
    // After a cancel the close listeners run on T_grpc, possibly after the stream was released.
    awaitTrue(() -> side.closeFires.get() >= 1, "close listeners ran");
    assertEquals(1, side.closeFires.get(), "close listeners fired once");
    assertTrue(side.listener.terminalOps() <= 1, "at most one terminal op");
    assertEquals(0, side.listener.opsOffExecutor.get(), "listener touched only on T_exec");
    assertEquals(0, side.listener.opsAfterCancel.get(), "no op from a task started after cancel");
  }

  @Test
  void s1_multiBatchSuccess() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      fx.script = side -> {
        for (int i = 0; i < 5; i++) {
          String md = "b" + i;
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 100), () -> utf8(md));
        }
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNull(result.error());
      assertEquals(500, result.rows());
      assertEquals(List.of("b0", "b1", "b2", "b3", "b4"), result.metadata());
      assertEquals(1, side.listener.completes.get());
      assertEquals(0, side.listener.errors.get());
      assertEquals(1, side.listener.starts.get());
      assertNull(side.producerFailure);
      assertEndedOnce(side);
    }
  }

  @Test
  void s2_failedFirstBatchGivesConsumerAnErrorNotAHang() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      AtomicReference<GatewayException> second = new AtomicReference<>();
      fx.script = side -> {
        try {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10), () -> {
            throw new IOException("metadata build failed");
          });
        } catch (GatewayException e) {
          // With one resident batch the producer waits until the batch it handed off is
          // written; the failed write may end that wait first, as the stream's own failure.
          assertEquals("flight.stream_closed", e.code());
        }
        try {
          awaitTrue(() -> !side.channel.isOpen(), "stream failed");
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10));
        } catch (GatewayException e) {
          second.set(e);
          fx.handler.sendError(side.channel, e); // a no-op: the stream already ended
        }
      };
      long start = System.nanoTime();
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNotNull(result.error(), "the consumer gets an error");
      assertEquals(FlightStatusCode.INTERNAL, result.error().status().code());
      assertTrue(System.nanoTime() - start < WAIT.toNanos() / 2, "no hang until the deadline");
      assertEquals("flight.stream_closed", second.get().code());
      assertEquals(0, side.listener.starts.get(), "no stream root adopted");
      assertEquals(1, side.listener.errors.get());
      assertEndedOnce(side);
    }
  }

  @Test
  void s2_producerErrorMidStreamReachesConsumer() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      fx.script = side -> fx.handler.produce(side.channel, ch -> {
        fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 7));
        fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 7));
        throw new GatewayException(Cause.UNSUPPORTED, "query.unsupported", "outside the profile");
      });
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(14, result.rows());
      assertEquals(FlightStatusCode.UNIMPLEMENTED, result.error().status().code());
      assertEquals(1, side.listener.errors.get());
      assertEndedOnce(side);
    }
  }

  /**
   * The mapper's StatusRuntimeException reaches {@code listener.error} as it is, so a code
   * Arrow's FlightStatusCode lacks (ABORTED here) and the diagnostic trailer arrive exactly.
   */
  @Test
  void s2_errorMapperStatusPassesThroughWithExactCodeAndTrailer() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      fx.script = side -> fx.handler.produce(side.channel, ch -> {
        fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 3));
        throw new GatewayException(
            Cause.NAMESPACE_CONFLICT, "query.namespace_conflict", "different bytes");
      });
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(3, result.rows());
      StatusRuntimeException sent =
          assertInstanceOf(StatusRuntimeException.class, side.listener.lastError);
      assertEquals(Status.Code.ABORTED, sent.getStatus().getCode());
      assertEquals(StatusUtils.fromGrpcStatusCode(Status.Code.ABORTED),
          result.error().status().code());
      assertEquals("query.namespace_conflict: different bytes",
          result.error().status().description());
      byte[] trailer = result.error().status().metadata().getByte(ErrorMapper.TRAILER_KEY);
      assertNotNull(trailer, "the diagnostic trailer reached the client");
      assertEquals("ABORTED", new ObjectMapper().readTree(trailer).get("status").asText());
      assertEndedOnce(side);
    }
  }

  /** The producer sends one batch of {@code rows} rows, then fails with {@code failure}. */
  private static void failAfterABatch(FlightFixture fx, int rows, RuntimeException failure) {
    fx.script = side -> fx.handler.produce(side.channel, ch -> {
      fx.handler.sendResponseBatch(ch, batch(ch.allocator(), rows));
      throw failure;
    });
  }

  /**
   * A mapper that fails, with an exception or an Error, still ends the call: INTERNAL, exactly
   * once. Until 2026-12-07 an Error (an assertion, a stack overflow) escaped after the terminal
   * was marked and the client waited for a status until its deadline.
   */
  @Test
  void s2_aFailingErrorMapperStillEndsTheCallWithInternal() throws Exception {
    for (RuntimeException orError : new RuntimeException[] {new IllegalStateException("x"), null}) {
      try (FlightFixture fx = new FlightFixture()) {
        fx.mapper = t -> {
          if (orError != null) {
            throw orError;
          }
          throw new AssertionError("a mapper's defect");
        };
        failAfterABatch(fx, 2, new IllegalArgumentException("the producer failed"));
        FlightFixture.ClientResult result = fx.read(-1);
        FlightFixture.ServerSide side = fx.nextOpened();
        fx.awaitQuiet();
        assertEquals(2, result.rows());
        assertEquals(FlightStatusCode.INTERNAL, result.error().status().code());
        assertTrue(result.error().status().description().startsWith("gateway.internal: "),
            result.error().status().description());
        // The trailer was encoded before any mapping ran, so the failed one cannot take it away.
        JsonNode diagnostic = new ObjectMapper()
            .readTree(result.error().status().metadata().getByte(ErrorMapper.TRAILER_KEY));
        assertEquals("gateway.internal", diagnostic.get("code").asText());
        assertEquals("incomplete", diagnostic.get("outcome").asText());
        assertEndedOnce(side);
      }
    }
  }

  /**
   * An abort from outside the producer (the data deadline's timer, the shutdown) after batches
   * were written: the client holds a prefix, so the outcome is incomplete whatever the cause's
   * own (a deadline's is unknown). Until 2026-12-06 only the producer's own failures said so.
   */
  @Test
  void s2_abortAfterWrittenBatchesSaysTheResultIsIncomplete() throws Exception {
    for (int batches : new int[] {0, 2}) {
      try (FlightFixture fx = new FlightFixture()) {
        fx.script = side -> fx.handler.produce(side.channel, ch -> {
          for (int i = 0; i < batches; i++) {
            fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 5));
          }
          ch.abort(GatewayException.of(Cause.DEADLINE, "flight.deadline_exceeded",
              "the stream did not finish within its data deadline"));
        });
        FlightFixture.ClientResult result = fx.read(-1);
        FlightFixture.ServerSide side = fx.nextOpened();
        fx.awaitQuiet();
        assertEquals(5L * batches, result.rows());
        assertEquals(FlightStatusCode.TIMED_OUT, result.error().status().code());
        byte[] trailer = result.error().status().metadata().getByte(ErrorMapper.TRAILER_KEY);
        assertEquals(batches > 0 ? "incomplete" : "unknown",
            new ObjectMapper().readTree(trailer).get("outcome").asText());
        assertEndedOnce(side);
      }
    }
  }

  /**
   * A producer's defect after a written batch (an exception that is not the gateway's) is still a
   * cut-short read: INTERNAL, outcome incomplete, not unknown.
   */
  @Test
  void s2_aDefectAfterWrittenBatchesSaysTheResultIsIncompleteToo() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      failAfterABatch(fx, 5, new IllegalStateException("a defect"));
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(5L, result.rows());
      assertEquals(FlightStatusCode.INTERNAL, result.error().status().code());
      byte[] trailer = result.error().status().metadata().getByte(ErrorMapper.TRAILER_KEY);
      assertEquals("incomplete", new ObjectMapper().readTree(trailer).get("outcome").asText());
      assertFalse(result.error().status().description().contains("a defect"),
          "a defect's text never reaches the caller");
      assertEndedOnce(side);
    }
  }

  @Test
  void s3_clientCancelOnIdleChannel() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      AtomicReference<GatewayException> refused = new AtomicReference<>();
      fx.script = side -> {
        awaitTrue(side.channel::isCancelled, "cancel delivered");
        try {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10));
        } catch (GatewayException e) {
          refused.set(e);
        }
        fx.handler.completeStream(side.channel);
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      stream.cancel("client gone", null);
      FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertEquals("flight.cancelled", refused.get().code());
      assertEquals(Cause.CANCELLED, refused.get().kind());
      assertEquals(0, side.listener.terminalOps(), "no terminal op after cancel");
      assertEquals(1, side.listener.cancels.get());
      assertEndedOnce(side);
    }
  }

  /**
   * A cancel closes the channel at once (its close listeners run on T_grpc), but the stream is
   * released — its permit and allocator, then the release callback — only once its producer has
   * ended: whatever the owner meters per stream (a caller's share) must follow the release.
   */
  @Test
  void s3_cancelClosesAtOnceButReleasesAfterTheProducerEnds() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CountDownLatch producerMayEnd = new CountDownLatch(1);
      fx.script = side -> fx.handler.produce(side.channel, ch -> {
        awaitTrue(ch::isCancelled, "cancel delivered");
        await(producerMayEnd); // a producer still inside a read, say
      });
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      stream.cancel("client gone", null);
      FlightFixture.read(stream, -1);
      awaitTrue(() -> side.closeFires.get() == 1, "the channel closed");
      Thread.sleep(100); // a release would have run by now if it followed the close
      assertEquals(0, side.releaseFires.get(), "not released while the producer runs");
      assertEquals(7, fx.registry.availablePermits(), "its permit still held");
      producerMayEnd.countDown();
      awaitTrue(() -> side.releaseFires.get() == 1, "released once the producer ended");
      assertEquals(8, fx.registry.availablePermits());
      fx.awaitQuiet();
      assertEndedOnce(side);
    }
  }

  @Test
  void s4_cancelRacesInFlightSend() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CountDownLatch inSecondPut = new CountDownLatch(1);
      CountDownLatch releasePut = new CountDownLatch(1);
      AtomicInteger puts = new AtomicInteger();
      fx.configure = l -> l.beforePutNext = () -> {
        if (puts.incrementAndGet() == 2) {
          inSecondPut.countDown();
          await(releasePut);
        }
      };
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 50));
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 50));
        fx.handler.completeStream(side.channel);
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      await(inSecondPut);
      stream.cancel("client gone", null);
      // T_grpc's close() returned while T_exec is still inside putNext: it did not block.
      awaitTrue(() -> side.listener.cancels.get() == 1, "cancel handler returned");
      assertFalse(side.channel.isOpen());
      assertNotNull(side.channel.streamRoot(), "root not freed under the in-flight send");
      assertTrue(fx.gatewayRoot.getAllocatedMemory() > 0, "root buffers still held by the send");
      assertFalse(side.channel.rootFreed().isDone());
      releasePut.countDown();
      FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertNull(side.channel.streamRoot());
      assertEquals(0, side.listener.completes.get(), "no completed() after cancel");
      assertEndedOnce(side);
    }
  }

  @Test
  void s5_cancelRacesReleaseDrivenClose() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      for (int i = 0; i < 50; i++) {
        CountDownLatch go = new CountDownLatch(1);
        fx.script = side -> {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 5));
          await(go);
          fx.handler.completeStream(side.channel); // T_exec: completed() then close()
        };
        FlightStream stream = fx.stream();
        FlightFixture.ServerSide side = fx.nextOpened();
        Thread transport = new Thread(() -> { await(go); side.channel.close(); }, "transport-release");
        Thread grpc = new Thread(() -> { await(go); side.channel.onChannelCancelled(); }, "t-grpc");
        transport.start();
        grpc.start();
        go.countDown();
        transport.join(WAIT.toMillis());
        grpc.join(WAIT.toMillis());
        fx.awaitQuiet();
        stream.cancel("end of race", null);
        FlightFixture.read(stream, -1);
        assertEndedOnce(side);
      }
    }
  }

  @Test
  void s6_earlyErrorInBootstrapClosesOnceAndConsumerGetsAnError() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      fx.script = side -> {
        CountDownLatch go = new CountDownLatch(1);
        Thread bootstrapClose = new Thread(() -> { await(go); side.channel.close(); }, "bootstrap");
        bootstrapClose.start();
        go.countDown();
        fx.handler.sendError(side.channel, new GatewayException(Cause.INVALID_TICKET, "ticket.invalid", "bad"));
        bootstrapClose.join(WAIT.toMillis());
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNotNull(result.error());
      // Whichever of the two ran first decides the status; either way exactly one terminal op.
      assertTrue(List.of(FlightStatusCode.INVALID_ARGUMENT, FlightStatusCode.UNAVAILABLE)
          .contains(result.error().status().code()), result.error().toString());
      assertEquals(1, side.listener.terminalOps());
      assertEndedOnce(side);
    }
  }

  @Test
  void s7_cancelWhileParkedInGateReleasesSource() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      AtomicInteger readyChecks = new AtomicInteger();
      AtomicReference<GatewayException> refused = new AtomicReference<>();
      fx.configure = l -> l.ready = () -> readyChecks.incrementAndGet() < 0;
      fx.script = side -> {
        try {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10));
        } catch (GatewayException e) {
          refused.set(e);
          fx.handler.sendError(side.channel, e); // the producer's terminal call, a wire no-op
        }
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      awaitTrue(() -> readyChecks.get() > 0, "producer parked in the gate");
      long start = System.nanoTime();
      stream.cancel("client gone", null);
      awaitTrue(() -> refused.get() != null, "gate woke on cancel");
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos(), "woken, not timed out");
      assertEquals("flight.cancelled", refused.get().code());
      FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertEquals(0, side.listener.putNexts.get());
      assertEndedOnce(side);
    }
  }

  @Test
  void s7_creditStallPastBudgetCutsOffTheStream() throws Exception {
    try (FlightFixture fx = new FlightFixture(2, FlightFixture.limits(Duration.ofMillis(300)))) {
      AtomicReference<GatewayException> refused = new AtomicReference<>();
      fx.configure = l -> l.ready = () -> false;
      fx.script = side -> {
        try {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10));
        } catch (GatewayException e) {
          refused.set(e);
          fx.handler.sendError(side.channel, e);
        }
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(Cause.BUDGET_EXHAUSTED, refused.get().kind());
      assertEquals("flight.credit_stall", refused.get().code());
      assertFalse(side.channel.isOpen(), "the stalled channel is closed");
      assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, result.error().status().code());
      assertEndedOnce(side);
    }
  }

  @Test
  void s7_readinessFlippingBetweenChecksNeverFailsTheGate() throws Exception {
    try (FlightFixture fx = new FlightFixture(2, FlightFixture.limits(Duration.ofSeconds(10)))) {
      AtomicInteger checks = new AtomicInteger();
      fx.configure = l -> l.ready = () -> (checks.incrementAndGet() & 1) == 0;
      fx.script = side -> {
        Thread flipper = new Thread(() -> {
          while (side.channel.isOpen()) {
            side.listener.fireOnReady(); // as gRPC's on-ready would, racing the producer's checks
            Thread.onSpinWait();
          }
        }, "t-grpc-ready");
        flipper.setDaemon(true);
        flipper.start();
        for (int i = 0; i < 20; i++) {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 3));
        }
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNull(result.error());
      assertEquals(60, result.rows());
      assertNull(side.producerFailure);
      assertEndedOnce(side);
    }
  }

  @Test
  void s7_refusedHandOffAtShutdownReleasesSource() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CountDownLatch shutDown = new CountDownLatch(1);
      AtomicReference<GatewayException> refused = new AtomicReference<>();
      fx.script = side -> {
        await(shutDown);
        try {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 10));
        } catch (GatewayException e) {
          refused.set(e);
          fx.handler.sendError(side.channel, e);
        }
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      assertTrue(fx.pool.shutdownGracefully(WAIT));
      shutDown.countDown();
      FlightFixture.ClientResult result = FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertEquals("flight.shutting_down", refused.get().code());
      // The producer's sendError ran on its own thread once the pool had stopped.
      assertEquals(FlightStatusCode.UNAVAILABLE, result.error().status().code());
      assertEndedOnce(side);
    }
  }

  @Test
  void s8_throwsInsideSendBatchFreeTheSource() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      // Second batch has another schema: the transfer refuses it after the root was adopted.
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 4));
        VarCharVector other = new VarCharVector("s", side.channel.allocator());
        other.allocateNew(2);
        other.setSafe(0, "x".getBytes(StandardCharsets.UTF_8));
        other.setValueCount(1);
        fx.handler.sendResponseBatch(side.channel, VectorSchemaRoot.of(other));
        fx.handler.completeStream(side.channel); // skipped: the failed send already ended the call
      };
      FlightFixture.ClientResult mismatch = fx.read(-1);
      FlightFixture.ServerSide first = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(4, mismatch.rows());
      assertEquals(FlightStatusCode.INTERNAL, mismatch.error().status().code());
      assertEndedOnce(first);

      // A zero-column batch: refused before any stream root exists.
      fx.script = side -> fx.handler.produce(side.channel, ch ->
          fx.handler.sendResponseBatch(ch, new VectorSchemaRoot(List.<FieldVector>of())));
      FlightFixture.ClientResult empty = fx.read(-1);
      FlightFixture.ServerSide second = fx.nextOpened();
      fx.awaitQuiet();
      assertNotNull(empty.error());
      assertEquals(0, second.listener.starts.get());
      assertEndedOnce(second);
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
    }
  }

  @Test
  void s8_metadataBufferFreedWhenPutNextThrowsBeforeTakingIt() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      fx.configure = l -> l.beforePutNext = () -> {
        throw new IllegalStateException("stream not ready");
      };
      fx.script = side -> {
        fx.handler.sendResponseBatch(
            side.channel, batch(side.channel.allocator(), 8), () -> utf8("metadata-bytes"));
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNotNull(result.error());
      assertEquals(1, side.listener.putNexts.get());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory(), "metadata buffer and roots freed");
      assertEndedOnce(side);
    }
  }

  /**
   * The other half of S8's window: the write took the metadata buffer and released it before it
   * failed. The channel must not release it again (its {@code refCnt} guard): the stream fails
   * with the write's own failure, not a reference-count error, and nothing is left.
   */
  @Test
  void s8_metadataBufferReleasedByAFailingWriteIsNotFreedAgain() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      List<Throwable> mapped = new CopyOnWriteArrayList<>();
      fx.mapper = t -> {
        mapped.add(t);
        return FlightFixture.map(t);
      };
      fx.configure = l -> l.releaseMetadataThenThrow = true;
      fx.script = side -> {
        fx.handler.sendResponseBatch(
            side.channel, batch(side.channel.allocator(), 8), () -> utf8("metadata-bytes"));
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNotNull(result.error());
      assertEquals(1, mapped.size(), mapped.toString());
      Throwable root = mapped.get(0);
      while (root.getCause() != null) {
        root = root.getCause();
      }
      assertEquals("the write failed after taking the metadata buffer", root.getMessage());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory(), "metadata buffer and roots freed once");
      assertEndedOnce(side);
    }
  }

  /**
   * Row 3's own check: a batch handed to the executor before the cancel and sent after it is
   * refused by {@code sendBatch} (the channel is cancelled) and its source freed there; nothing
   * is written for it.
   */
  @Test
  void s3_aBatchQueuedBeforeTheCancelIsRefusedWhenItsTurnComesAndFreed() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CountDownLatch holdExec = new CountDownLatch(1);
      CountDownLatch execHeld = new CountDownLatch(1);
      CountDownLatch queued = new CountDownLatch(1);
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 5));
        side.channel.executor().execute(() -> { execHeld.countDown(); await(holdExec); });
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 5));
        queued.countDown(); // the second batch's task waits behind the held executor
        fx.handler.completeStream(side.channel);
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      assertTrue(stream.next());
      await(execHeld);
      await(queued);
      stream.cancel("client gone", null);
      awaitTrue(() -> side.listener.cancels.get() == 1, "cancel delivered");
      holdExec.countDown();
      FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertEquals(1, side.listener.putNexts.get(), "nothing written after the cancel");
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory(), "the queued batch's source freed");
      assertEndedOnce(side);
    }
  }

  @Test
  void s9_streamRootReusedAcrossBatchesAndFreedOnceAtCloseWithCancel() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      List<VectorSchemaRoot> rootsSeen = new CopyOnWriteArrayList<>();
      AtomicReference<FlightFixture.ServerSide> current = new AtomicReference<>();
      CountDownLatch holdExec = new CountDownLatch(1);
      CountDownLatch execHeld = new CountDownLatch(1);
      fx.configure = l -> l.beforePutNext = () -> rootsSeen.add(current.get().channel.streamRoot());
      fx.script = side -> {
        // Set here, before the first send: the script starts as soon as the stream opens, so a
        // write could run before the test thread's nextOpened() returned.
        current.set(side);
        for (int i = 0; i < 3; i++) {
          fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 20));
        }
        side.channel.executor().execute(() -> { execHeld.countDown(); await(holdExec); });
        fx.handler.completeStream(side.channel); // queued behind the held executor
      };
      FlightStream stream = fx.stream();
      FlightFixture.ServerSide side = fx.nextOpened();
      for (int i = 0; i < 3; i++) {
        assertTrue(stream.next());
      }
      await(execHeld);
      stream.cancel("client gone", null);
      awaitTrue(() -> side.listener.cancels.get() == 1, "cancel delivered");
      // The free is queued behind the busy executor; nothing was freed on T_grpc. The root
      // itself holds no batch between writes (each write copies, then empties it).
      assertNotNull(side.channel.streamRoot());
      assertFalse(side.channel.rootFreed().isDone());
      assertEquals(0, side.channel.allocator().getAllocatedMemory());
      holdExec.countDown();
      FlightFixture.read(stream, -1);
      fx.awaitQuiet();
      assertEquals(3, rootsSeen.size());
      rootsSeen.forEach(r -> assertSame(rootsSeen.get(0), r, "one reused stream root"));
      assertEquals(1, side.listener.starts.get());
      assertNull(side.channel.streamRoot(), "root nulled by its single free");
      assertTrue(side.channel.rootFreed().isDone());
      long before = fx.pool.pendingTasks();
      side.channel.close(); // a later close posts nothing: the free ran exactly once
      assertEquals(before, fx.pool.pendingTasks());
      assertEndedOnce(side);
    }
  }

  @Test
  void s10_throwableAfterRootAdoptionFailsStreamAndWorkerSurvives() throws Exception {
    try (FlightFixture fx = new FlightFixture(1, FlightFixture.limits(Duration.ofSeconds(10)))) {
      for (Throwable fatal : List.of(new OutOfMemoryError("direct memory"), new AssertionError("-ea check"))) {
        AtomicInteger puts = new AtomicInteger();
        fx.configure = l -> l.beforePutNext = () -> {
          if (puts.incrementAndGet() == 2) {
            sneakyThrow(fatal);
          }
        };
        fx.script = side -> {
          for (int i = 0; i < 3; i++) {
            fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 9));
          }
          fx.handler.completeStream(side.channel);
        };
        FlightFixture.ClientResult result = fx.read(-1);
        FlightFixture.ServerSide side = fx.nextOpened();
        fx.awaitQuiet();
        assertEquals(9, result.rows());
        // Allocation failure is UNAVAILABLE (the profile), a failed assertion a defect.
        assertEquals(fatal instanceof OutOfMemoryError
            ? FlightStatusCode.UNAVAILABLE : FlightStatusCode.INTERNAL,
            result.error().status().code());
        assertEquals(1, side.listener.errors.get());
        assertEquals(0, side.listener.completes.get());
        assertEndedOnce(side);
      }
      // The single executor worker survived both: a new stream still runs to completion.
      fx.configure = l -> {};
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 2));
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult ok = fx.read(-1);
      fx.nextOpened();
      assertNull(ok.error());
      assertEquals(2, ok.rows());
    }
  }

  @Test
  void streamsExhaustedRefusesBeyondThePermitLimitAndReturnsThePermit() throws Exception {
    StreamLimits one = new StreamLimits(1, 16L << 20, Duration.ofSeconds(10), 2);
    try (FlightFixture fx = new FlightFixture(2, one)) {
      CountDownLatch finish = new CountDownLatch(1);
      fx.script = side -> {
        await(finish);
        fx.handler.completeStream(side.channel);
      };
      FlightStream holder = fx.stream();
      fx.nextOpened();
      FlightFixture.ClientResult refused = fx.read(-1);
      assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, refused.error().status().code());
      assertTrue(refused.error().status().description().startsWith("flight.streams_exhausted: "),
          refused.error().status().description());
      finish.countDown();
      assertNull(FlightFixture.read(holder, -1).error());
      fx.awaitQuiet();
      assertEquals(1, fx.registry.availablePermits());
      fx.script = side -> fx.handler.completeStream(side.channel);
      assertNull(fx.read(-1).error(), "the returned permit admits a new stream");
      fx.nextOpened();
    }
  }

  @Test
  void s11_slowReaderStreamHoldsOneBatchAtATime() throws Exception {
    final int rows = 65_536;
    final int batches = 12;
    long oneBatch;
    try (BufferAllocator scratch = new RootAllocator();
        VectorSchemaRoot sample = batch(scratch, rows)) {
      oneBatch = scratch.getAllocatedMemory(); // as the allocator accounts it
    }
    StreamLimits oneResident = new StreamLimits(8, 64L << 20, Duration.ofSeconds(10), 1);
    try (FlightFixture fx = new FlightFixture(2, oneResident)) {
      // A slow client, deterministically: gRPC is ready for one message every 20 ms (the Java
      // client buffers too eagerly to make the real transport not ready on its own).
      AtomicBoolean credit = new AtomicBoolean();
      fx.configure = l -> l.ready = () -> credit.getAndSet(false);
      fx.script = side -> {
        Thread client = new Thread(() -> {
          while (side.channel.isOpen()) {
            LockSupport.parkNanos(20_000_000L);
            credit.set(true);
            side.listener.fireOnReady(); // as gRPC's on-ready would, on T_grpc
          }
        }, "t-grpc-ready");
        client.setDaemon(true);
        client.start();
        fx.handler.produce(side.channel, ch -> {
          for (int i = 0; i < batches; i++) {
            fx.handler.sendResponseBatch(ch, batch(ch.allocator(), rows));
          }
        });
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNull(result.error());
      assertEquals((long) rows * batches, result.rows());
      assertTrue(side.listener.notReady.get() > 0, "the producer parked holding a batch");
      // Never a second batch beside the one being built or written, none kept in the root:
      // exactly one batch at the peak (Flight's copy is in gRPC's buffers, not this allocator).
      assertEquals(oneBatch, side.channel.allocator().getPeakMemoryAllocation());
      assertEquals(oneBatch, fx.registry.streamPeakBytes());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
      assertEndedOnce(side);
    }
  }

  @Test
  void s1_lastBatchHandOffReturnsBeforeItsWriteAndTheCompletionQueuesBehindIt() throws Exception {
    StreamLimits oneResident = new StreamLimits(8, 64L << 20, Duration.ofSeconds(10), 1);
    try (FlightFixture fx = new FlightFixture(2, oneResident)) {
      CountDownLatch writerHeld = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger pendingAfterLast = new AtomicInteger(-1);
      fx.script = side -> {
        // Hold T_exec, so no batch can be written until the producer has returned.
        side.channel.executor().execute(() -> {
          writerHeld.countDown();
          await(release);
        });
        await(writerHeld);
        fx.handler.produce(side.channel, ch -> {
          fx.handler.sendLastResponseBatch(ch, batch(ch.allocator(), 10), () -> utf8("last"),
              FlightOutboundHandler.BeforeHandOff.NONE);
          pendingAfterLast.set(ch.executor().pendingBatches());
        });
        release.countDown();
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(1, pendingAfterLast.get(), "returned with its batch still waiting on T_exec");
      assertNull(result.error());
      assertEquals(10, result.rows());
      assertEquals(List.of("last"), result.metadata());
      assertEquals(1, side.listener.completes.get());
      assertNull(side.producerFailure);
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
      assertEndedOnce(side);
    }
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
    throw (T) t;
  }
}
