package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.flight.FlightStatusCode;
import org.junit.jupiter.api.Test;

/**
 * The release waits for the call: a stream whose channel closed, whose root is freed and whose
 * producer is done still holds its permit until its transport call is over (the server passes
 * gRPC's onComplete or onCancel), since gRPC may still hold its last batch for a client that has
 * not read it. Then it is released once, with every byte back.
 */
class StreamReleaseTest {

  @Test
  void aStreamKeepsItsPermitUntilItsCallIsOverThenReleasesOnce() throws Exception {
    StreamLimits onePermit = new StreamLimits(1, 64L << 20, Duration.ofSeconds(10), 1);
    try (FlightFixture fx = new FlightFixture(1, onePermit)) {
      CompletableFuture<Void> callEnded = new CompletableFuture<>();
      fx.callEnded = callEnded;
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 5));
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult first = fx.read(-1);
      assertNull(first.error());
      assertEquals(5, first.rows());
      FlightFixture.ServerSide side = fx.nextOpened();
      FlightFixture.awaitTrue(() -> side.channel.producerDone().isDone()
          && side.channel.rootFreed().isDone(), "the producer done and the root freed");
      // Everything the channel owns is freed; the permit is still the call's.
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
      assertEquals(1, fx.registry.liveStreams());
      assertEquals(0, fx.registry.availablePermits());
      assertEquals(0, side.releaseFires.get());

      fx.callEnded = CompletableFuture.completedFuture(null);
      FlightFixture.ClientResult refused = fx.read(-1);
      assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, refused.error().status().code(),
          "the one permit is still held");

      callEnded.complete(null);
      FlightFixture.awaitTrue(() -> fx.registry.liveStreams() == 0, "released once over");
      assertEquals(1, side.releaseFires.get());
      assertEquals(1, fx.registry.availablePermits());
      assertEquals(1, fx.registry.releasedStreams());
      FlightFixture.ClientResult again = fx.read(-1);
      assertNull(again.error());
      assertEquals(5, again.rows());
      fx.nextOpened();
    }
  }

  @Test
  void shutdownWaitsForACallWhoseEndIsReportedAfterTheListenerStopped() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      CompletableFuture<Void> callEnded = new CompletableFuture<>();
      fx.callEnded = callEnded;
      fx.script = side -> {
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 3));
        fx.handler.completeStream(side.channel);
      };
      assertNull(fx.read(-1).error());
      FlightFixture.ServerSide side = fx.nextOpened();
      FlightFixture.awaitTrue(() -> side.channel.rootFreed().isDone(), "the root freed");
      // gRPC reports a call's end on its own executor, which the server's termination does not
      // wait for: here it comes 300 ms into the stop.
      CompletableFuture.delayedExecutor(300, java.util.concurrent.TimeUnit.MILLISECONDS)
          .execute(() -> callEnded.complete(null));
      long start = System.nanoTime();
      assertTrue(fx.registry.shutdown(Duration.ofSeconds(10)), "every stream released in time");
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos());
      assertEquals(0, fx.registry.liveStreams());
      assertEquals(1, side.releaseFires.get());
      assertEquals(0, fx.gatewayRoot.getAllocatedMemory());
    }
  }
}
