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

  /**
   * The stop claims a task between its hand-over and the pool's refusal: its fallback ran on the
   * stopping thread, so the caller is not told of the refusal (it would act a second time: a
   * second terminal call, a second drain of one stream).
   */
  @Test
  void aTaskTheStopClaimedWhileItWasRefusedGetsOneLastWordOnly() {
    ClaimOnce claims = new ClaimOnce();
    AtomicInteger fallbacks = new AtomicInteger();
    java.util.concurrent.Executor stoppingMidHandOver = task -> {
      assertEquals(1, claims.runStranded()); // the stop runs here, before the pool says no
      throw new RejectedExecutionException("stopped");
    };
    claims.execute(stoppingMidHandOver, () -> { throw new AssertionError("never runs"); },
        fallbacks::incrementAndGet);
    assertEquals(1, fallbacks.get());
    // A fallback that fails does not keep the others from their last word.
    ExecutorService idle = LastIdlePool.create("claim-test", 1);
    CountDownLatch release = new CountDownLatch(1);
    try {
      idle.execute(() -> {
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      claims.execute(idle, () -> { }, () -> { throw new IllegalStateException("first"); });
      claims.execute(idle, () -> { }, fallbacks::incrementAndGet);
      idle.shutdownNow();
      assertThrows(IllegalStateException.class, claims::runStranded);
      assertEquals(2, fallbacks.get());
    } finally {
      release.countDown();
      idle.shutdownNow();
    }
  }
}
