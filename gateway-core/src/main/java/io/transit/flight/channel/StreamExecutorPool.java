package io.transit.flight.channel;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * <p>Threads: any thread may call any method. The pending-task counter is guarded by {@code
 * drainMonitor}, a leaf monitor whose critical sections only count.
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

  private final ThreadPoolExecutor workers;
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
    AtomicInteger counter = new AtomicInteger();
    ThreadFactory factory =
        r -> {
          Thread t = new Thread(r, name + "-" + counter.incrementAndGet());
          t.setDaemon(true);
          return t;
        };
    this.workers =
        new ThreadPoolExecutor(
            threads, threads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), factory);
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
      List<Runnable> stranded = workers.shutdownNow();
      LOG.error(
          "stream executor pool did not drain in {}: {} task(s) pending, running {} stranded"
              + " stream drain(s) on the shutdown thread",
          timeout,
          pendingTasks(),
          stranded.size());
      for (Runnable drain : stranded) {
        // Each stranded runnable holds its stream's token (scheduled but never started).
        drain.run();
      }
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
      workers.execute(drain);
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
