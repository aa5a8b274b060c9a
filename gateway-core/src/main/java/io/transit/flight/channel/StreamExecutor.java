package io.transit.flight.channel;

import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One stream's single-writer executor (T_exec): a serializing executor over the shared {@link
 * StreamExecutorPool}. Guarantees:
 *
 * <ul>
 *   <li><b>FIFO</b>: tasks run in the order they were accepted.
 *   <li><b>One at a time</b>: no two tasks of this stream ever run concurrently, and every
 *       write made by one task is visible to the next (hand-over under {@code lock}).
 *   <li><b>Non-reentrant</b>: a task that posts another task never runs it inline; it runs
 *       after the current task returns.
 *   <li><b>Nothing is dropped</b>: an accepted task always runs, on a pool worker or, once the
 *       pool has terminated, on the posting thread (which then holds this stream's token).
 * </ul>
 *
 * <p>{@link #checkOnExecutor()} lets confined code assert that it runs as this stream's
 * writer. {@link #execute(Runnable)} is for tasks that must run (terminal ops, failure paths,
 * the root free); {@link #executeBatch(Runnable)} is for batch sends, which are refused once the
 * pool drains so a shutdown cannot be held open by a producer.
 *
 * <p>Threads: any thread may post; tasks run on the current drain thread only.
 */
public final class StreamExecutor {
  private static final Logger LOG = LoggerFactory.getLogger(StreamExecutor.class);

  private record Entry(Runnable task, boolean batch) {}

  private final StreamExecutorPool pool;
  private final String name;
  private final Object lock = new Object();
  // @GuardedBy("lock")
  private final ArrayDeque<Entry> queue = new ArrayDeque<>();
  // @GuardedBy("lock"): a drain is queued on the pool or running; it is this stream's token.
  private boolean scheduled;
  // @GuardedBy("lock"): batch tasks accepted and not yet finished.
  private int pendingBatches;
  // Written under lock by the drain thread; volatile so checkOnExecutor reads it lock-free.
  private volatile Thread owner;
  // Incremented under lock as each task starts; volatile for cross-thread readers.
  private volatile long startedTasks;
  private volatile Runnable batchFinishedHook = () -> {};

  StreamExecutor(StreamExecutorPool pool, String name) {
    this.pool = pool;
    this.name = name;
  }

  /** This stream executor's name (used in messages). */
  public String name() {
    return name;
  }

  /**
   * Posts a task that must run (never refused): a terminal op, a failure path, a root free.
   */
  public void execute(Runnable task) {
    submit(task, false);
  }

  /**
   * Posts a batch send.
   *
   * @throws RejectedExecutionException when the pool is draining or terminated; the task is
   *     then not queued and the caller still owns whatever the task would have freed
   */
  public void executeBatch(Runnable task) {
    submit(task, true);
  }

  /**
   * Throws unless the calling thread is currently running this stream's tasks.
   *
   * @throws IllegalStateException off the executor
   */
  public void checkOnExecutor() {
    Thread current = Thread.currentThread();
    if (owner != current) {
      throw new IllegalStateException(
          "must run on stream executor " + name + " (expected owner: " + owner + ", was: "
              + current.getName() + ")");
    }
  }

  /** Whether the calling thread is currently this stream's writer. */
  public boolean inExecutor() {
    return owner == Thread.currentThread();
  }

  /** Batch tasks accepted and not finished; the readiness gate bounds it. */
  public int pendingBatches() {
    synchronized (lock) {
      return pendingBatches;
    }
  }

  /**
   * How many tasks of this stream have started. On the executor it is the running task's
   * number; tests use it to tell tasks that began before an event from those that began after.
   */
  public long startedTasks() {
    return startedTasks;
  }

  /** Sets the hook run (on the executor) after each batch task finishes. */
  void onBatchFinished(Runnable hook) {
    this.batchFinishedHook = hook;
  }

  private void submit(Runnable task, boolean batch) {
    boolean startDrain;
    synchronized (lock) {
      if (batch && pool.state() != StreamExecutorPool.State.RUNNING) {
        throw new RejectedExecutionException(
            "stream executor " + name + " refuses batches: pool is " + pool.state());
      }
      queue.add(new Entry(task, batch));
      if (batch) {
        pendingBatches++;
      }
      pool.taskAccepted();
      startDrain = !scheduled;
      scheduled = true;
    }
    if (startDrain && !pool.dispatch(this::drain)) {
      // The workers are gone: this thread becomes the stream's writer until the queue empties.
      drain();
    }
  }

  private void drain() {
    synchronized (lock) {
      owner = Thread.currentThread();
    }
    while (true) {
      Entry entry;
      synchronized (lock) {
        entry = queue.poll();
        if (entry == null) {
          // Clear the owner before giving up the token so the next drain thread's owner sticks.
          owner = null;
          scheduled = false;
          return;
        }
        startedTasks = startedTasks + 1;
      }
      try {
        entry.task().run();
      } catch (Throwable t) {
        // Tasks handle their own failures; one escaping must not kill the worker or the queue.
        LOG.error("task escaped on stream executor {}", name, t);
      } finally {
        if (entry.batch()) {
          synchronized (lock) {
            pendingBatches--;
          }
          runHook();
        }
        pool.taskFinished();
      }
    }
  }

  private void runHook() {
    try {
      batchFinishedHook.run();
    } catch (RuntimeException e) {
      LOG.error("batch-finished hook failed on stream executor {}", name, e);
    }
  }
}
