package io.transit.flight.channel;

import io.transit.flight.threads.ClaimOnce;
import io.transit.flight.threads.LastIdlePool;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared, bounded pool of worker threads on which every stream's {@link StreamExecutor}
 * (T_exec) runs. Each stream gets its own serializing executor from {@link
 * #newStreamExecutor(String)}; the pool only supplies threads, so one slow stream occupies at
 * most one worker and never stalls another stream's writes.
 *
 * <p><b>Shutdown drains.</b> {@link #shutdownGracefully(Duration)} closes the gap the channel
 * contract (§10) leaves open: queued tasks are run, never dropped. While draining, new batch
 * sends are refused ({@link StreamExecutor#executeBatch} throws, and the outbound handler then
 * frees the refused batch), but terminal ops and the root free that {@code close()} posts are
 * still accepted and run. Once the pool has terminated, such tasks run on the posting thread,
 * which takes the stream's single-writer token exactly as a worker would, so a late {@code
 * close()} still frees its stream root and nothing is run concurrently with another task of the
 * same stream.
 *
 * <p><b>Workers.</b> A {@link LastIdlePool}: a drain goes to the worker that went idle last, so a
 * quiet server writes its streams on one warm thread instead of rotating over all of them. Its
 * {@code shutdownNow} cancels queued tasks instead of returning them, so each dispatched drain is
 * handed over through a {@link ClaimOnce}: a worker runs it, or the shutdown thread for the ones
 * that never got a worker.
 *
 * <p>Threads: any thread may call any method. The pending-task counter is guarded by {@code
 * drainMonitor}, a leaf monitor whose critical sections only count. A dispatched drain runs once,
 * on the thread that claims it first.
 */
public final class StreamExecutorPool implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StreamExecutorPool.class);
  private static final Duration DEFAULT_SHUTDOWN = Duration.ofSeconds(10);

  /** Lifecycle of the pool; only ever moves forward. */
  enum State {
    RUNNING,
    DRAINING,
    TERMINATED
  }

  private final ExecutorService workers;
  private final ClaimOnce drains = new ClaimOnce();
  private volatile State state = State.RUNNING;
  private final Object drainMonitor = new Object();
  // @GuardedBy("drainMonitor"): tasks accepted by any stream executor and not yet finished.
  private long pendingTasks;

  /**
   * Creates a pool of {@code threads} daemon workers named {@code name-N}.
   *
   * <p>The work queue is unbounded in type but bounded in practice: a stream executor keeps at
   * most one drain runnable in it at a time, and the {@link StreamRegistry} bounds live streams.
   */
  public StreamExecutorPool(String name, int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads: " + threads + " (expected: >= 1)");
    }
    this.workers = LastIdlePool.create(name, threads);
  }

  /**
   * Returns a new serializing executor for one stream.
   *
   * @throws RejectedExecutionException once shutdown has begun
   */
  public StreamExecutor newStreamExecutor(String streamName) {
    if (state != State.RUNNING) {
      throw new RejectedExecutionException("stream executor pool is " + state + ", not RUNNING");
    }
    return new StreamExecutor(this, streamName);
  }

  /** Whether {@link #shutdownGracefully(Duration)} has begun. */
  public boolean isShutdown() {
    return state != State.RUNNING;
  }

  /** Tasks accepted by this pool's stream executors that have not finished yet. */
  public long pendingTasks() {
    synchronized (drainMonitor) {
      return pendingTasks;
    }
  }

  /**
   * Drains and stops the pool: refuses new batch sends, runs every queued task (including posted
   * root frees) until none is pending or {@code timeout} passes, then stops the workers. Drain
   * runnables that never reached a worker are run on the calling thread, so no queued root free
   * is dropped even when a task overran the timeout. Idempotent.
   *
   * @return {@code true} when every accepted task ran and the workers stopped in time
   */
  public boolean shutdownGracefully(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    if (state == State.RUNNING) {
      state = State.DRAINING;
    }
    boolean drained = awaitNoPending(deadline);
    state = State.TERMINATED;
    workers.shutdown();
    boolean stopped = awaitWorkers(deadline);
    if (!stopped) {
      workers.shutdownNow();
      long pending = pendingTasks();
      // Each stranded drain holds its stream's token (scheduled but never started).
      int stranded = drains.runStranded();
      LOG.error(
          "stream executor pool did not drain in {}: {} task(s) pending, ran {} stranded"
              + " stream drain(s) on the shutdown thread",
          timeout,
          pending,
          stranded);
    }
    boolean clean = drained && stopped && pendingTasks() == 0;
    if (!clean) {
      LOG.error("stream executor pool shut down with {} task(s) still pending", pendingTasks());
    }
    return clean;
  }

  /** Same as {@code shutdownGracefully(10s)}. */
  @Override
  public void close() {
    shutdownGracefully(DEFAULT_SHUTDOWN);
  }

  State state() {
    return state;
  }

  void taskAccepted() {
    synchronized (drainMonitor) {
      pendingTasks++;
    }
  }

  void taskFinished() {
    synchronized (drainMonitor) {
      pendingTasks--;
      if (pendingTasks == 0) {
        drainMonitor.notifyAll();
      }
    }
  }

  /** Hands a stream's drain to a worker; {@code false} when the workers no longer accept work. */
  boolean dispatch(Runnable drain) {
    if (state == State.TERMINATED) {
      return false;
    }
    try {
      drains.execute(workers, drain, drain);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  private boolean awaitNoPending(long deadline) {
    synchronized (drainMonitor) {
      while (pendingTasks > 0) {
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
          return false;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(drainMonitor, remaining);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      return true;
    }
  }

  private boolean awaitWorkers(long deadline) {
    try {
      // A drained pool still needs a moment for workers to leave their drain loops.
      long remaining = Math.max(deadline - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(100));
      return workers.awaitTermination(remaining, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
