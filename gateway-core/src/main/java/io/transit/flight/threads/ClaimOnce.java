package io.transit.flight.threads;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Tasks handed to a pool whose stop may drop them, each with a fallback that runs instead: a
 * task that owes someone a last word — a stream's drain, a stream's terminal call — never
 * vanishes with the queue.
 *
 * <p><b>Threads.</b> {@link #execute} from any thread, the pool's own workers included; {@link
 * #runStranded} from the thread stopping the pool, after its {@code shutdownNow}. The first
 * thread to claim a task wins: a worker that starts it runs the task, the stopping thread (or,
 * after the stop, the thread handing it over) runs its fallback. A task and its fallback never
 * both run.
 *
 * <p><b>Why.</b> A {@link LastIdlePool} is a ForkJoinPool: its {@code shutdownNow} cancels the
 * queued tasks without returning them, and a task one of its workers submits after the shutdown
 * is not refused but may be cancelled later just as silently. So {@link #runStranded} runs the
 * fallback of every task no worker started, and from then on {@link #execute} runs the fallback
 * at once rather than hand the task to the stopped pool. So one instance serves one pool's life.
 */
public final class ClaimOnce {
  // Tasks handed over that no thread has claimed yet; any thread adds, the claimer removes.
  private final Set<Claim> notStarted = ConcurrentHashMap.newKeySet();
  // Set once by runStranded, before it walks notStarted; read by execute on any thread.
  private volatile boolean stopped;

  /**
   * Hands {@code task} to {@code pool}; {@code ifStranded} runs instead if the pool stops before
   * a worker starts it — also when the stop comes while this call is still handing it over (then
   * the stopping thread ran the fallback), and when it came before: then the fallback runs here,
   * on the calling thread. Either way this returns normally.
   *
   * @throws RejectedExecutionException when {@code pool} refused it and no stop claimed it;
   *     neither will run, the caller decides
   */
  public void execute(Executor pool, Runnable task, Runnable ifStranded) {
    Claim c = new Claim(task, ifStranded);
    notStarted.add(c);
    if (stopped) {
      // The stop's walk may have passed already; a worker's submission would not be refused
      // (LastIdlePool, Stopping), so the last word is given here.
      if (c.claim()) {
        ifStranded.run();
      }
      return;
    }
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
   * Claims every task no worker started and runs its fallback on the calling thread; tasks
   * handed over from now on run their fallback at once ({@link #execute}). A fallback that
   * throws does not keep the others from running; the first failure is thrown after them.
   *
   * @return how many fallbacks ran
   */
  public int runStranded() {
    // Before the walk: a task added after the walk passed its place sees the flag (both
    // volatile, so one of the two sees the other).
    stopped = true;
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

  /** One task handed over; immutable but for {@code claimed}, which any thread may CAS once. */
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

    /** On a worker. */
    @Override
    public void run() {
      if (claim()) {
        task.run();
      }
    }
  }
}
