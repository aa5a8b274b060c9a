package io.transit.flight.threads;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Tasks handed to a pool whose {@code shutdownNow} cancels the queued ones without returning them
 * (a {@link LastIdlePool} is a ForkJoinPool). A task that owes someone a last word — a stream's
 * drain, a stream's terminal call — must not vanish with the queue, so each is wrapped: the first
 * thread to claim it wins, a worker that starts it runs the task, and {@link #runStranded} runs
 * the fallback of each one no worker started.
 *
 * <p>Threads: {@link #execute} from any thread; {@link #runStranded} from the thread stopping the
 * pool, after its {@code shutdownNow}. A task and its fallback never both run.
 */
public final class ClaimOnce {
  // Tasks handed to the pool that no thread has claimed yet.
  private final Set<Claim> notStarted = ConcurrentHashMap.newKeySet();

  /**
   * Hands {@code task} to {@code pool}; {@code ifStranded} runs instead if the pool stops before
   * a worker starts it — also when the stop comes while this call is still handing it over: then
   * the stopping thread ran the fallback, and this returns normally.
   *
   * @throws RejectedExecutionException when {@code pool} refused it and no stop claimed it;
   *     neither will run, the caller decides
   */
  public void execute(Executor pool, Runnable task, Runnable ifStranded) {
    Claim c = new Claim(task, ifStranded);
    notStarted.add(c);
    try {
      pool.execute(c);
    } catch (RejectedExecutionException e) {
      if (c.claim()) {
        throw e;
      }
      // runStranded claimed it between the add and the refusal, and ran its fallback: one
      // last word only, so the caller must not act on the refusal too.
    }
  }

  /**
   * Claims every task no worker started and runs its fallback on the calling thread. A fallback
   * that throws does not keep the others from running; the first failure is thrown after them.
   *
   * @return how many fallbacks ran
   */
  public int runStranded() {
    int ran = 0;
    RuntimeException failure = null;
    for (Claim c : notStarted) {
      if (c.claim()) {
        ran++;
        try {
          c.ifStranded.run();
        } catch (RuntimeException e) {
          if (failure == null) {
            failure = e;
          } else {
            failure.addSuppressed(e);
          }
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
    return ran;
  }

  private final class Claim implements Runnable {
    private final Runnable task;
    private final Runnable ifStranded;
    private final AtomicBoolean claimed = new AtomicBoolean();

    Claim(Runnable task, Runnable ifStranded) {
      this.task = task;
      this.ifStranded = ifStranded;
    }

    boolean claim() {
      if (!claimed.compareAndSet(false, true)) {
        return false;
      }
      notStarted.remove(this);
      return true;
    }

    @Override
    public void run() {
      if (claim()) {
        task.run();
      }
    }
  }
}
