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
      // Refused by the stopped pool before the stop's last words: the caller decides.
      assertThrows(RejectedExecutionException.class,
          () -> claims.execute(pool, ran::incrementAndGet, fallbacks::incrementAndGet));
      assertEquals(1, claims.runStranded(), "the queued second; a refused task is not kept");
      assertEquals(0, claims.runStranded(), "a fallback runs once");
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
      assertEquals(1, ran.get(), "the running task ended, the queued one never ran");
      assertEquals(1, fallbacks.get());
      // After the stop, a hand-over gives its last word at once, on the calling thread.
      claims.execute(pool, ran::incrementAndGet, fallbacks::incrementAndGet);
      assertEquals(2, fallbacks.get());
      assertEquals(0, claims.runStranded());
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
      // A pool of its own, so a ClaimOnce of its own: the one above has stopped.
      ClaimOnce idleClaims = new ClaimOnce();
      idleClaims.execute(idle, () -> { }, () -> { throw new IllegalStateException("first"); });
      idleClaims.execute(idle, () -> { }, fallbacks::incrementAndGet);
      idle.shutdownNow();
      assertThrows(IllegalStateException.class, idleClaims::runStranded);
      assertEquals(2, fallbacks.get());
    } finally {
      release.countDown();
      idle.shutdownNow();
    }
  }

  /**
   * A worker hands a task over after the stop's last words: the ForkJoinPool does not refuse a
   * worker's own submission, and the stop's next step (a second shutdownNow here; a worker
   * leaving does the same) cancels it silently. It got neither run nor fallback; now the
   * hand-over gives the fallback at once, on that worker.
   */
  @Test
  void aTaskAWorkerHandsOverAfterTheStopStillGetsItsLastWord() throws Exception {
    ExecutorService pool = LastIdlePool.create("claim-test", 1);
    ClaimOnce claims = new ClaimOnce();
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch stopped = new CountDownLatch(1);
    CountDownLatch handedOver = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger ran = new AtomicInteger();
    AtomicInteger fallbacks = new AtomicInteger();
    try {
      claims.execute(pool, () -> {
        started.countDown();
        awaitIgnoringInterrupts(stopped); // the stop interrupts it; it goes on, as a drain does
        claims.execute(pool, ran::incrementAndGet, fallbacks::incrementAndGet);
        handedOver.countDown();
        awaitIgnoringInterrupts(release);
      }, () -> { throw new AssertionError("the first task started"); });
      assertTrue(started.await(5, TimeUnit.SECONDS));
      pool.shutdownNow();
      assertEquals(0, claims.runStranded());
      stopped.countDown();
      assertTrue(handedOver.await(5, TimeUnit.SECONDS));
      pool.shutdownNow(); // cancels whatever the worker queued
      release.countDown();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
      assertEquals(1, ran.get() + fallbacks.get(), "exactly one last word");
      assertEquals(1, fallbacks.get());
      assertEquals(0, claims.runStranded());
    } finally {
      stopped.countDown();
      release.countDown();
      pool.shutdownNow();
    }
  }

  /** Waits up to 5 s for {@code latch}, through interrupts. */
  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (latch.getCount() > 0 && System.nanoTime() < deadline) {
      try {
        latch.await(10, TimeUnit.MILLISECONDS);
      } catch (InterruptedException ignored) {
        // keeps waiting
      }
    }
  }
}
