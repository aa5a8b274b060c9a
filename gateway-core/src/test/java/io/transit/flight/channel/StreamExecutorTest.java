package io.transit.flight.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The serializing executor and the pool's draining shutdown. */
class StreamExecutorTest {
  private static final long WAIT_MS = 20_000;

  private static void await(CountDownLatch latch) {
    try {
      assertTrue(latch.await(WAIT_MS, TimeUnit.MILLISECONDS), "latch within bound");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  @Test
  void fifoPerStreamOneTaskAtATimeAndConfinementHolds() throws Exception {
    StreamExecutorPool pool = new StreamExecutorPool("fifo", 3);
    int streams = 4;
    int tasks = 500;
    List<List<Integer>> order = new ArrayList<>();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger confinementFailures = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(streams * tasks);
    List<Thread> posters = new ArrayList<>();
    for (int s = 0; s < streams; s++) {
      StreamExecutor exec = pool.newStreamExecutor("s" + s);
      List<Integer> seen = new CopyOnWriteArrayList<>();
      order.add(seen);
      AtomicBoolean running = new AtomicBoolean();
      Thread poster = new Thread(() -> {
        for (int i = 0; i < tasks; i++) {
          int n = i;
          Runnable task = () -> {
            if (!running.compareAndSet(false, true)) {
              overlaps.incrementAndGet();
            }
            try {
              exec.checkOnExecutor();
            } catch (IllegalStateException e) {
              confinementFailures.incrementAndGet();
            }
            seen.add(n);
            running.set(false);
            done.countDown();
          };
          if ((n & 1) == 0) {
            exec.execute(task);
          } else {
            exec.executeBatch(task);
          }
        }
      });
      posters.add(poster);
      poster.start();
    }
    for (Thread t : posters) {
      t.join(WAIT_MS);
    }
    await(done);
    assertEquals(0, overlaps.get(), "two tasks of one stream overlapped");
    assertEquals(0, confinementFailures.get());
    for (List<Integer> seen : order) {
      for (int i = 0; i < tasks; i++) {
        assertEquals(i, seen.get(i), "FIFO order");
      }
    }
    assertTrue(pool.shutdownGracefully(Duration.ofSeconds(10)));
  }

  @Test
  void differentStreamsRunInParallel() {
    StreamExecutorPool pool = new StreamExecutorPool("par", 2);
    StreamExecutor a = pool.newStreamExecutor("a");
    StreamExecutor b = pool.newStreamExecutor("b");
    CountDownLatch bRan = new CountDownLatch(1);
    CountDownLatch aDone = new CountDownLatch(1);
    a.execute(() -> { await(bRan); aDone.countDown(); }); // blocks until b runs meanwhile
    b.execute(bRan::countDown);
    await(aDone);
    assertTrue(pool.shutdownGracefully(Duration.ofSeconds(10)));
  }

  @Test
  void checkOnExecutorThrowsOffTheExecutor() {
    StreamExecutorPool pool = new StreamExecutorPool("check", 1);
    StreamExecutor exec = pool.newStreamExecutor("x");
    IllegalStateException e = assertThrows(IllegalStateException.class, exec::checkOnExecutor);
    assertTrue(e.getMessage().contains("must run on stream executor x"), e.getMessage());
    assertTrue(pool.shutdownGracefully(Duration.ofSeconds(10)));
  }

  @Test
  void postedTaskNeverRunsInlineInsideAnotherTask() {
    StreamExecutorPool pool = new StreamExecutorPool("reentrant", 1);
    StreamExecutor exec = pool.newStreamExecutor("x");
    List<String> order = new CopyOnWriteArrayList<>();
    CountDownLatch done = new CountDownLatch(1);
    exec.execute(() -> {
      exec.execute(() -> { order.add("inner"); done.countDown(); });
      order.add("outer-end");
    });
    await(done);
    assertEquals(List.of("outer-end", "inner"), order);
    assertTrue(pool.shutdownGracefully(Duration.ofSeconds(10)));
  }

  @Test
  void shutdownRunsQueuedTasksRefusesNewBatchesAndAcceptsTerminalTasks() throws Exception {
    StreamExecutorPool pool = new StreamExecutorPool("drain", 1);
    StreamExecutor exec = pool.newStreamExecutor("x");
    CountDownLatch hold = new CountDownLatch(1);
    List<String> ran = new CopyOnWriteArrayList<>();
    exec.execute(() -> await(hold));
    exec.executeBatch(() -> ran.add("batch-1"));
    exec.executeBatch(() -> ran.add("batch-2"));
    exec.execute(() -> ran.add("root-free"));
    AtomicReference<Boolean> clean = new AtomicReference<>();
    Thread stopper = new Thread(() -> clean.set(pool.shutdownGracefully(Duration.ofSeconds(15))));
    stopper.start();
    FlightFixture.awaitTrue(pool::isShutdown, "draining");
    assertThrows(RejectedExecutionException.class, () -> exec.executeBatch(() -> ran.add("late")));
    exec.execute(() -> ran.add("terminal"));
    assertThrows(RejectedExecutionException.class, () -> pool.newStreamExecutor("y"));
    hold.countDown();
    stopper.join(WAIT_MS);
    assertEquals(Boolean.TRUE, clean.get());
    assertEquals(List.of("batch-1", "batch-2", "root-free", "terminal"), ran);
    assertEquals(0, pool.pendingTasks());
  }

  @Test
  void tasksPostedAfterTerminationRunOnThePostingThreadAsTheWriter() {
    StreamExecutorPool pool = new StreamExecutorPool("late", 1);
    StreamExecutor exec = pool.newStreamExecutor("x");
    assertTrue(pool.shutdownGracefully(Duration.ofSeconds(10)));
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    exec.execute(() -> { exec.checkOnExecutor(); ranOn.set(Thread.currentThread()); });
    assertSame(Thread.currentThread(), ranOn.get(), "a late root free still runs, on its poster");
    assertFalse(exec.inExecutor(), "the poster gave the token back");
    assertThrows(RejectedExecutionException.class, () -> exec.executeBatch(() -> {}));
  }

  @Test
  void shutdownPastItsTimeoutStillRunsStrandedDrains() throws Exception {
    StreamExecutorPool pool = new StreamExecutorPool("stuck", 1);
    StreamExecutor stuck = pool.newStreamExecutor("stuck");
    StreamExecutor waiting = pool.newStreamExecutor("waiting");
    CountDownLatch hold = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    AtomicInteger laterOnStuck = new AtomicInteger();
    stuck.execute(() -> {
      started.countDown();
      try {
        hold.await(WAIT_MS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // shutdownNow interrupts; the drain goes on
      }
    });
    stuck.execute(laterOnStuck::incrementAndGet);
    await(started);
    AtomicReference<Thread> freeRanOn = new AtomicReference<>();
    waiting.execute(() -> freeRanOn.set(Thread.currentThread())); // queued behind the stuck worker
    assertFalse(pool.shutdownGracefully(Duration.ofMillis(200)), "reports the overrun");
    assertSame(Thread.currentThread(), freeRanOn.get(), "stranded drain ran on the shutdown thread");
    FlightFixture.awaitTrue(() -> laterOnStuck.get() == 1, "the interrupted worker finished its queue");
    FlightFixture.awaitTrue(() -> pool.pendingTasks() == 0, "nothing pending");
  }
}
