package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.junit.jupiter.api.Test;

/**
 * The DoGet producers' pool at shutdown: a stream whose producer was still queued behind a stuck
 * one gets its terminal call from the stopping thread, so it is released and the stop is clean.
 */
class ProducerPoolTest {
  @Test
  void aStreamWhoseProducerNeverGotAThreadIsEndedAtShutdown() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      ProducerPool pool = new ProducerPool("t-producer", 1, fx.handler);
      CountDownLatch stuck = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      CountDownLatch queued = new CountDownLatch(1);
      AtomicBoolean queuedRan = new AtomicBoolean();
      try {
        // The one worker sits in a call that ignores interrupts, as a stuck read would.
        fx.script = side -> pool.start(side.channel, ch -> {
          stuck.countDown();
          awaitIgnoringInterrupts(release);
        });
        FlightStream first = fx.stream();
        await(stuck);
        fx.script = side -> {
          pool.start(side.channel, ch -> queuedRan.set(true));
          queued.countDown();
        };
        FlightStream second = fx.stream();
        await(queued);

        assertFalse(pool.shutdown(Duration.ofMillis(200), Duration.ofMillis(200)),
            "the stuck worker outlives the shutdown's waits");
        FlightFixture.ClientResult refused = FlightFixture.read(second, 0);
        assertNotNull(refused.error(), "the queued stream was ended");
        assertEquals(FlightStatusCode.UNAVAILABLE, refused.error().status().code());
        assertEquals("flight.producer_unavailable: the gateway is shutting down",
            refused.error().status().description());
        assertFalse(queuedRan.get(), "its producer never ran");

        release.countDown();
        FlightFixture.ClientResult done = FlightFixture.read(first, 0);
        assertNull(done.error(), "the stuck producer still ends its own stream");
        fx.awaitQuiet();
      } finally {
        release.countDown();
      }
    }
  }

  @Test
  void aStreamStartedAfterTheShutdownIsRefusedAtOnce() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      ProducerPool pool = new ProducerPool("t-producer", 1, fx.handler);
      assertTrue(pool.shutdown(Duration.ofSeconds(5), Duration.ofSeconds(5)));
      AtomicBoolean ran = new AtomicBoolean();
      fx.script = side -> pool.start(side.channel, ch -> ran.set(true));
      FlightFixture.ClientResult refused = fx.read(0);
      assertNotNull(refused.error());
      assertEquals(FlightStatusCode.UNAVAILABLE, refused.error().status().code());
      assertFalse(ran.get());
    }
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    boolean interrupted = false;
    long deadline = System.nanoTime() + FlightFixture.WAIT.toNanos();
    try {
      while (latch.getCount() > 0 && System.nanoTime() < deadline) {
        try {
          latch.await(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
