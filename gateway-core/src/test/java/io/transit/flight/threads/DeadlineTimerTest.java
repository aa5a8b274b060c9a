package io.transit.flight.threads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The deadline timer: a deadline cancelled before it is due leaves nothing queued behind it. */
class DeadlineTimerTest {
  @Test
  void aCancelledDeadlineLeavesTheTimersQueueAtOnce() throws InterruptedException {
    ScheduledExecutorService timer = DeadlineTimer.create();
    try {
      // As many streams' 10-minute data deadlines as a second of small statements opens, each
      // cancelled when its stream closes.
      List<ScheduledFuture<?>> deadlines = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        deadlines.add(timer.schedule(() -> { }, 10, TimeUnit.MINUTES));
      }
      ScheduledThreadPoolExecutor pool = (ScheduledThreadPoolExecutor) timer;
      assertEquals(1_000, pool.getQueue().size());
      deadlines.forEach(d -> d.cancel(false));
      assertEquals(0, pool.getQueue().size(), "cancelled deadlines still queued");

      // A deadline that is due still fires.
      CountDownLatch fired = new CountDownLatch(1);
      timer.schedule(fired::countDown, 1, TimeUnit.MILLISECONDS);
      assertTrue(fired.await(10, TimeUnit.SECONDS));
    } finally {
      timer.shutdownNow();
      assertTrue(timer.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /**
   * A deadline task that throws (a StreamDeadline.expire, a CompileGate.fire) is logged: its
   * future is read by no one, so the failure was silent. A cancelled one is not a failure.
   */
  @Test
  void aFailingDeadlineIsLoggedAndTheTimerGoesOn() throws Exception {
    ScheduledExecutorService timer = DeadlineTimer.create("deadline-test");
    try (CapturedErr err = new CapturedErr()) {
      timer.schedule(() -> {
        throw new IllegalStateException("deadline failure 4b2d");
      }, 1, TimeUnit.MILLISECONDS);
      assertTrue(err.awaitText("deadline failure 4b2d"), err.text());
      assertTrue(err.text().contains("ERROR " + DeadlineTimer.class.getName()), err.text());
      assertTrue(err.text().contains("deadline-test"), err.text());
      timer.schedule(() -> { }, 10, TimeUnit.MINUTES).cancel(false);
      CountDownLatch fired = new CountDownLatch(1);
      timer.schedule(fired::countDown, 1, TimeUnit.MILLISECONDS);
      assertTrue(fired.await(10, TimeUnit.SECONDS), "the next deadline fires");
      assertFalse(err.text().contains("CancellationException"), err.text());
    } finally {
      timer.shutdownNow();
      assertTrue(timer.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
