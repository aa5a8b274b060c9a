package io.transit.flight.threads;

import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deadline timers: each one daemon thread running scheduled tasks that are nearly all cancelled
 * before they are due.
 *
 * <p><b>Threads.</b> A timer is created by its owner (the daemon's on its main thread); tasks
 * are scheduled and cancelled from any thread (the executor is thread-safe) and run on the
 * timer's thread. On the daemon's timer ({@link #create()}) they must only hand work off (post
 * to a channel's executor, cancel a compilation): every stream and compile deadline waits
 * behind the one running. A task that throws is logged at ERROR there, as its future is read by
 * no one.
 *
 * <p><b>The daemon's timer</b>, {@code transit-deadlines}, holds the data deadlines of DoGet
 * streams ({@code StreamDeadline}) and the compile budgets ({@code CompileGate}). A component
 * whose deadline task does more than hand off has a timer of its own ({@link #create(String)}):
 * the S3 segment store aborts a GET's body on {@code segments-read-deadlines}, a call into the
 * HTTP client that delays only that store's other body deadlines.
 *
 * <p>A cancelled task leaves the queue at once: by default it stays queued until its delay has
 * passed, and each DoGet left its 10-minute deadline behind (72 bytes a statement, about
 * 240,000 tasks at 400 statements a second, moved through the young generation into the old
 * one).
 */
public final class DeadlineTimer {
  private static final Logger LOG = LoggerFactory.getLogger(DeadlineTimer.class);

  private DeadlineTimer() {}

  /** The daemon's timer, {@code transit-deadlines}. */
  public static ScheduledExecutorService create() {
    return create("transit-deadlines");
  }

  /** A timer of its own, on one daemon thread named {@code name}. */
  public static ScheduledExecutorService create(String name) {
    ScheduledThreadPoolExecutor timer = new Logged(name);
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }

  /** Logs a task's failure, which its future would otherwise keep unread. */
  private static final class Logged extends ScheduledThreadPoolExecutor {
    private final String name;

    Logged(String name) {
      super(1, r -> {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
      });
      this.name = name;
    }

    /** On the timer's thread, after each task. */
    @Override
    protected void afterExecute(Runnable r, Throwable t) {
      super.afterExecute(r, t);
      Throwable failure = t;
      if (failure == null && r instanceof Future<?> f && f.isDone()) {
        try {
          f.get(); // done: does not wait
        } catch (ExecutionException e) {
          failure = e.getCause();
        } catch (CancellationException e) {
          // Cancelled, not failed: the common case.
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt(); // shutdownNow's: the timer is stopping
        }
      }
      if (failure != null) {
        LOG.error("a deadline task on {} failed; that deadline did not act", name, failure);
      }
    }
  }
}
