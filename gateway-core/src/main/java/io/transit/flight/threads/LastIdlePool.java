package io.transit.flight.threads;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pool of at most {@code threads} threads that hands each task to the thread that went idle
 * last.
 *
 * <p><b>Threads.</b> Built and stopped by the owning component ({@link #stop} runs on the thread
 * stopping it); tasks are submitted from any thread and run on the workers, daemon threads named
 * {@code name-N}. A task that throws is logged at ERROR by its worker, which then ends (the next
 * task starts a new one). This class keeps no state of its own.
 *
 * <p><b>Why the last idle thread.</b> A ThreadPoolExecutor's queue wakes the one idle longest, so
 * a statement's calls and callbacks rotated over every thread of a pool (48 service threads in
 * 3,000 statements; both execution threads, one statement each in turn), each waking with cold
 * caches — its TLAB, and for DuckDB its allocator's thread cache. A ForkJoinPool parks its idle
 * workers on a stack and wakes the top one (docs/performance.md, twelfth and thirteenth rounds).
 *
 * <p>The pool never grows past {@code threads} to make up for a blocked worker (a service thread
 * blocks while its statement is admitted, a producer while its stream waits for credit, an
 * execution thread while DuckDB runs): such a task waits for a free thread, as in a fixed pool.
 * Idle workers end slowly: JDK 17's ForkJoinPool lets one go per 60 s keep-alive, and only while
 * no worker is busy, so under steady traffic a pool keeps the threads a burst started (up to
 * {@code threads}; measured 2026-12-07: 33 service threads kept for minutes after a burst of
 * failing calls, one ending a minute once the daemon was quiet). Each is a parked thread: its
 * stack's memory, no CPU.
 *
 * <p><b>Stopping.</b> {@code shutdownNow} interrupts running tasks, as a ThreadPoolExecutor's
 * does, but cancels the queued ones without returning them. And a task that a worker submits
 * after the shutdown is not refused: on JDK 17 a ForkJoinPool pushes its own worker's submission
 * onto that worker's queue without looking at the run state (only other threads' submissions are
 * refused). Such a task runs if a worker still reaches it, or is cancelled silently by the next
 * termination step (another {@code shutdownNow}, a worker leaving). A task that owes someone a
 * last word goes through {@link ClaimOnce}, which covers both.
 */
public final class LastIdlePool {
  private static final Logger LOG = LoggerFactory.getLogger(LastIdlePool.class);

  private LastIdlePool() {}

  /**
   * Stops {@code pool} the way a stopping gateway does: no new task, queued and running ones get
   * {@code grace}; then the running ones are interrupted, {@code afterInterrupt} runs (the
   * owner's last word for queued tasks that {@code shutdownNow} cancelled), and they get {@code
   * after} more. On the thread stopping the pool's owner. An interrupt of that thread cuts the
   * waits short: the pool is interrupted at once, {@code afterInterrupt} still runs (once), and
   * the interrupt is kept for the caller. A failing {@code afterInterrupt} is logged; the stop
   * goes on.
   *
   * @return whether every thread ended; false (logged, naming {@code what} and how long the stop
   *     waited) when one is still inside a call that ignores interrupts, e.g. a JDBC or
   *     object-store call
   */
  public static boolean stop(ExecutorService pool, String what, Duration grace, Duration after,
      Runnable afterInterrupt) {
    long start = System.nanoTime();
    boolean lastWordGiven = false;
    boolean interrupted = false;
    pool.shutdown();
    try {
      if (pool.awaitTermination(grace.toNanos(), TimeUnit.NANOSECONDS)) {
        return true;
      }
      pool.shutdownNow();
      lastWordGiven = true;
      lastWord(afterInterrupt, what);
      if (pool.awaitTermination(after.toNanos(), TimeUnit.NANOSECONDS)) {
        return true;
      }
    } catch (InterruptedException e) {
      interrupted = true;
      pool.shutdownNow();
      if (!lastWordGiven) {
        lastWord(afterInterrupt, what);
      }
      // Restored after the last word, which must not be cut short by it.
      Thread.currentThread().interrupt();
    }
    if (pool.isTerminated()) {
      return true;
    }
    LOG.warn("{} threads still running {} ms into the shutdown{}", what,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start),
        interrupted ? " (the stopping thread was interrupted)" : "");
    return false;
  }

  private static void lastWord(Runnable afterInterrupt, String what) {
    try {
      afterInterrupt.run();
    } catch (RuntimeException e) {
      // The threads are still to be waited for, and the caller to be told whether they ended.
      LOG.error("{} pool: the last word for its cancelled tasks failed", what, e);
    }
  }

  /** A pool of at most {@code threads} daemon threads named {@code name-N}. */
  public static ExecutorService create(String name, int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads: " + threads + " (expected: >= 1)");
    }
    AtomicInteger n = new AtomicInteger(); // worker numbers; any thread that starts a worker
    ForkJoinPool.ForkJoinWorkerThreadFactory factory = fj -> {
      ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(fj);
      t.setName(name + "-" + n.incrementAndGet());
      return t;
    };
    // Without a handler the worker's failure went to standard error only, past the log.
    Thread.UncaughtExceptionHandler logged = (t, e) ->
        LOG.error("a task on {} failed; the thread ends", t.getName(), e);
    // asyncMode: a worker's own submissions run first in, first out, as from outside.
    // maximumPoolSize = threads and saturate -> true: no compensating threads, no rejection.
    return new ForkJoinPool(threads, factory, logged, true, 0, threads, 1, fj -> true, 60,
        TimeUnit.SECONDS);
  }
}
