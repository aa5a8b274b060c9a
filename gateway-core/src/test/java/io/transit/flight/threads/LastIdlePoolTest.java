package io.transit.flight.threads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The service, producer and execution pools: blocked workers are not replaced, so a pool never
 * exceeds its size; failures are logged; a stop gives its last word once. */
class LastIdlePoolTest {
  @Test
  void aTaskThatFindsEveryThreadBlockedWaitsForOneInsteadOfAnExtraThread() throws Exception {
    ExecutorService pool = LastIdlePool.create("test-pool", 2);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch twoStarted = new CountDownLatch(2);
    CountDownLatch allDone = new CountDownLatch(3);
    AtomicInteger running = new AtomicInteger();
    AtomicInteger mostAtOnce = new AtomicInteger();
    Set<String> names = ConcurrentHashMap.newKeySet();
    try {
      for (int i = 0; i < 3; i++) {
        pool.execute(() -> {
          mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
          names.add(Thread.currentThread().getName());
          twoStarted.countDown();
          try {
            release.await(10, TimeUnit.SECONDS); // a blocked service thread, as in admission
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            running.decrementAndGet();
            allDone.countDown();
          }
        });
      }
      assertTrue(twoStarted.await(5, TimeUnit.SECONDS), "two tasks run");
      // The third stays queued while both threads block: no compensating thread starts.
      assertFalse(allDone.await(300, TimeUnit.MILLISECONDS));
      assertEquals(2, running.get());
      release.countDown();
      assertTrue(allDone.await(5, TimeUnit.SECONDS), "the third runs once a thread is free");
      assertEquals(2, mostAtOnce.get());
      assertTrue(names.stream().allMatch(n -> n.matches("test-pool-\\d+")), names.toString());
    } finally {
      release.countDown();
      pool.shutdown();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
    }
  }

  /** A task's exception reaches the log (it went to standard error only), and the pool goes on. */
  @Test
  void aFailingTaskIsLoggedAndThePoolKeepsWorking() throws Exception {
    ExecutorService pool = LastIdlePool.create("failing-pool", 1);
    try (CapturedErr err = new CapturedErr()) {
      pool.execute(() -> {
        throw new IllegalStateException("task failure 7f3a");
      });
      assertTrue(err.awaitText("task failure 7f3a"), err.text());
      assertTrue(err.text().contains("ERROR " + LastIdlePool.class.getName()), err.text());
      assertTrue(err.text().contains("failing-pool-1"), err.text());
      CountDownLatch next = new CountDownLatch(1);
      pool.execute(next::countDown);
      assertTrue(next.await(5, TimeUnit.SECONDS), "the next task runs");
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
    }
  }

  /**
   * The stopping thread interrupted while it waits for a task that ignores interrupts: the last
   * word runs once (twice when the interrupt came in the second wait), a failing one does not
   * escape, and the warning says how long the stop waited, not the grace and after it skipped.
   */
  @Test
  void anInterruptedStopGivesItsLastWordOnceAndSaysSo() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    // Each stop begins once its task runs: a task still queued would be cancelled by the stop and
    // the pool end at once, with nothing stuck.
    java.util.concurrent.Semaphore running = new java.util.concurrent.Semaphore(0);
    Runnable stuck = () -> {
      running.release();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (release.getCount() > 0 && System.nanoTime() < deadline) {
        try {
          release.await(10, TimeUnit.MILLISECONDS); // ignores interrupts, as a JDBC call does
        } catch (InterruptedException ignored) {
          // keeps waiting
        }
      }
    };
    try (CapturedErr err = new CapturedErr()) {
      // Interrupted in the second wait: the last word interrupts its own thread.
      ExecutorService pool = LastIdlePool.create("stop-test", 1);
      pool.execute(stuck);
      assertTrue(running.tryAcquire(10, TimeUnit.SECONDS));
      AtomicInteger lastWords = new AtomicInteger();
      assertFalse(LastIdlePool.stop(pool, "second-wait", Duration.ofMillis(20),
          Duration.ofSeconds(30), () -> {
            lastWords.incrementAndGet();
            Thread.currentThread().interrupt();
          }));
      assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
      assertEquals(1, lastWords.get());

      // Interrupted before the first wait, with a last word that fails.
      ExecutorService pool2 = LastIdlePool.create("stop-test", 1);
      pool2.execute(stuck);
      assertTrue(running.tryAcquire(10, TimeUnit.SECONDS));
      Thread.currentThread().interrupt();
      assertFalse(LastIdlePool.stop(pool2, "first-wait", Duration.ofSeconds(30),
          Duration.ofSeconds(30), () -> {
            lastWords.incrementAndGet();
            throw new IllegalStateException("last word failure 9c1e");
          }));
      assertTrue(Thread.interrupted());
      assertEquals(2, lastWords.get());
      String log = err.text();
      assertTrue(log.contains("last word failure 9c1e"), log);
      assertTrue(log.matches("(?s).*first-wait threads still running \\d+ ms into the shutdown"
          + " \\(the stopping thread was interrupted\\).*"), log);
      assertFalse(log.contains("60 s"), log);
      release.countDown();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
      assertTrue(pool2.awaitTermination(5, TimeUnit.SECONDS));
    } finally {
      release.countDown();
    }
  }
}
