package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.WAIT;
import static io.transit.flight.channel.FlightFixture.await;
import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.flight.FlightStatusCode;
import org.junit.jupiter.api.Test;

/**
 * Root-cause class 11: a shutdown with batch sends queued and a close()-posted root free queued
 * behind a busy executor drains them all; nothing leaks and every stream is released.
 */
class StreamRegistryShutdownTest {

  @Test
  void shutdownDrainsQueuedSendsAndPostedRootFreeWithoutLeak() throws Exception {
    ExecutorService clients = Executors.newFixedThreadPool(2);
    // Three resident batches: room for two queued behind the held worker, plus the one built.
    StreamLimits twoQueued = new StreamLimits(8, 64L << 20, Duration.ofSeconds(10), 3);
    try (FlightFixture fx = new FlightFixture(1, twoQueued)) {
      CountDownLatch holdExec = new CountDownLatch(1);
      CountDownLatch aRole = new CountDownLatch(1);
      CountDownLatch aQueued = new CountDownLatch(1);
      CountDownLatch bQueued = new CountDownLatch(1);
      AtomicInteger which = new AtomicInteger();
      AtomicReference<FlightServerChannel> aChannel = new AtomicReference<>();
      fx.script = side -> {
        FlightServerChannel ch = side.channel;
        if (which.getAndIncrement() == 0) {
          // Stream A: one batch out, then the only worker is held while two more batches
          // queue and close() posts the root free behind them.
          aChannel.set(ch);
          aRole.countDown();
          fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 10));
          ch.executor().execute(() -> await(holdExec));
          fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 10));
          fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 10));
          ch.close();
          fx.handler.completeStream(ch);
          aQueued.countDown();
        } else {
          // Stream B: its whole stream waits behind A's held worker.
          await(aQueued);
          fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 5));
          fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 5));
          fx.handler.completeStream(ch);
          bQueued.countDown();
        }
      };
      CompletableFuture<FlightFixture.ClientResult> a =
          CompletableFuture.supplyAsync(() -> fx.read(-1), clients);
      fx.nextOpened();
      // Scripts run on a pool once their stream opens: B's stream opens only after A's script
      // took the first role, or B's could take it and the clients' roles would swap.
      await(aRole);
      CompletableFuture<FlightFixture.ClientResult> b =
          CompletableFuture.supplyAsync(() -> fx.read(-1), clients);
      fx.nextOpened();
      await(bQueued);
      assertTrue(fx.gatewayRoot.getAllocatedMemory() > 0, "queued sources and the stream root");
      assertNotNull(aChannel.get().streamRoot(), "A's root free is queued, not yet run");

      AtomicReference<Boolean> clean = new AtomicReference<>();
      Thread stopper = new Thread(() -> clean.set(fx.registry.shutdown(Duration.ofSeconds(15))));
      stopper.start();
      FlightFixture.awaitTrue(fx.pool::isShutdown, "pool draining");
      holdExec.countDown();
      stopper.join(WAIT.toMillis());

      assertEquals(Boolean.TRUE, clean.get(), "drained, released, nothing leaked");
      assertEquals(0, fx.registry.liveStreams());
      assertEquals(0, fx.registry.leakedStreams());
      assertEquals(2, fx.registry.releasedStreams());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());

      FlightFixture.ClientResult ra = a.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertEquals(10, ra.rows(), "A's queued batches were refused by its closed channel");
      assertEquals(FlightStatusCode.UNAVAILABLE, ra.error().status().code(), "closed before completion");
      FlightFixture.ClientResult rb = b.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertNull(rb.error(), "B's queued sends ran during the drain");
      assertEquals(10, rb.rows());
    } finally {
      clients.shutdownNow();
    }
  }

  @Test
  void closeAfterTheDrainStillFreesTheStreamRoot() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CountDownLatch stopped = new CountDownLatch(1);
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 6));
        await(stopped);
        side.channel.close(); // the pool is gone: the free runs on this thread
        fx.handler.completeStream(side.channel);
      };
      CompletableFuture<FlightFixture.ClientResult> result =
          CompletableFuture.supplyAsync(() -> fx.read(-1));
      FlightFixture.ServerSide side = fx.nextOpened();
      FlightFixture.awaitTrue(() -> side.listener.putNexts.get() == 1, "first batch sent");
      assertTrue(fx.pool.shutdownGracefully(WAIT));
      assertNotNull(side.channel.streamRoot());
      stopped.countDown();
      fx.awaitQuiet();
      assertNull(side.channel.streamRoot());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
      assertEquals(FlightStatusCode.UNAVAILABLE,
          result.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).error().status().code());
    }
  }
}
