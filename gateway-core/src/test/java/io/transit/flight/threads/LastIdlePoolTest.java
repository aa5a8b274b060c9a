package io.transit.flight.threads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The service, producer and execution pools: blocked workers are not replaced, so a pool never
 * exceeds its size; failures are logged. */
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
}
