package io.transit.flight.threads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A queued task that a {@link LastIdlePool}'s shutdownNow cancels still gets its fallback. */
class ClaimOnceTest {
  @Test
  void aTaskCancelledInTheQueueRunsItsFallbackAndARunningOneDoesNot() throws Exception {
    ExecutorService pool = LastIdlePool.create("claim-test", 1);
    ClaimOnce claims = new ClaimOnce();
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger ran = new AtomicInteger();
    AtomicInteger fallbacks = new AtomicInteger();
    try {
      claims.execute(pool, () -> {
        started.countDown();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        ran.incrementAndGet();
      }, fallbacks::incrementAndGet);
      assertTrue(started.await(5, TimeUnit.SECONDS));
      claims.execute(pool, ran::incrementAndGet, fallbacks::incrementAndGet);

      pool.shutdownNow(); // interrupts the first, cancels the queued second
      assertEquals(1, claims.runStranded());
      assertEquals(0, claims.runStranded(), "a fallback runs once");
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
      assertEquals(1, ran.get(), "the running task ended, the queued one never ran");
      assertEquals(1, fallbacks.get());
      assertThrows(RejectedExecutionException.class,
          () -> claims.execute(pool, ran::incrementAndGet, fallbacks::incrementAndGet));
      assertEquals(0, claims.runStranded(), "a refused task is not kept");
      assertFalse(ran.get() > 1);
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }
}
