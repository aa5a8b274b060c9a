package io.transit.flight.threads;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The daemon's deadline timer, one daemon thread {@code transit-deadlines}: the data deadlines
 * of DoGet streams ({@code StreamDeadline}) and the compile budgets ({@code CompileGate}).
 * Nearly every deadline is cancelled long before it is due, so a cancelled one leaves the queue
 * at once: by default a cancelled task stays queued until its delay has passed, and each DoGet
 * left its 10-minute deadline behind (72 bytes a statement, about 240,000 tasks at 400
 * statements a second, moved through the young generation into the old one).
 *
 * <p>Threads: created by the daemon's main thread; tasks are scheduled and cancelled from any
 * thread (the executor is thread-safe) and run on the timer's thread, where they must only hand
 * work off (post to a channel's executor, cancel a compilation).
 */
public final class DeadlineTimer {
  private DeadlineTimer() {}

  public static ScheduledExecutorService create() {
    return create("transit-deadlines");
  }

  /** A timer of its own, on one daemon thread named {@code name}. */
  public static ScheduledExecutorService create(String name) {
    ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }
}
