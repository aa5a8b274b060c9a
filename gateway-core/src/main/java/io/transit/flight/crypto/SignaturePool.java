package io.transit.flight.crypto;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Runs independent signature operations (a chain's command signatures, a batch of verifications)
 * concurrently: the calling thread and up to {@code helpers} pool threads claim items from one
 * shared index, so the caller never waits for a queue — when every helper is busy or the queue is
 * full it simply does all the work itself, exactly as a sequential loop would.
 *
 * <p>Threads: {@link #map} may be called from any thread (gRPC service threads during admission).
 * Its items are claimed once each (the {@code next} counter); the result array is written by
 * whichever thread claimed the index and read by the caller only after the latch says every item
 * finished, which orders the writes before the reads. The caller waits only for items a helper
 * has already claimed — at most one operation per helper — and that wait is bounded ({@link
 * #MAX_WAIT_SECONDS}). {@link #close} is called once by the owner after callers stop.
 *
 * <p>The function must be safe to call concurrently (Ed25519 keys are immutable; each thread uses
 * its own engine) and must not block.
 */
public final class SignaturePool implements AutoCloseable {
  /** A claimed item is one Ed25519 operation (≤ a few ms even on a loaded machine). */
  static final long MAX_WAIT_SECONDS = 30;

  private final ThreadPoolExecutor executor; // null: everything runs on the caller
  private final int helpers;

  private SignaturePool(int helpers, String threadPrefix) {
    if (helpers < 0) {
      throw new IllegalArgumentException("helpers: " + helpers + " (expected: >= 0)");
    }
    this.helpers = helpers;
    if (helpers == 0) {
      this.executor = null;
      return;
    }
    AtomicInteger n = new AtomicInteger();
    // A short bounded queue: a helper that would start late is worth less than the caller's own
    // thread, which claims the same items meanwhile.
    this.executor = new ThreadPoolExecutor(helpers, helpers, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(helpers * 4), r -> {
          Thread t = new Thread(r, threadPrefix + "-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        }, new ThreadPoolExecutor.AbortPolicy());
  }

  /**
   * A pool with {@code helpers} threads besides the caller, named {@code signature-N}; 0 runs
   * everything on the caller.
   */
  public static SignaturePool withHelpers(int helpers) {
    return new SignaturePool(helpers, "signature");
  }

  /**
   * One helper per spare processor (the caller is the other one), named {@code threadPrefix-N}: a
   * daemon runs two pools (the gateway's signing, the engine's verification), and a thread dump
   * must tell them apart. Together they hold up to twice the spare processors, which is harmless:
   * a helper only takes work the caller has not claimed, so a busy pool adds no wait.
   */
  public static SignaturePool forProcessors(String threadPrefix) {
    return new SignaturePool(Math.max(1, Runtime.getRuntime().availableProcessors() - 1),
        threadPrefix);
  }

  /** Runs every operation on the calling thread (tests, tools, single-threaded callers). */
  public static SignaturePool inline() {
    return new SignaturePool(0, "signature");
  }

  public int helpers() {
    return helpers;
  }

  /**
   * {@code fn} applied to every item, results in item order. The first failure (after every
   * claimed item finished) is rethrown on the caller as is when unchecked.
   */
  public <T, R> List<R> map(List<T> items, Function<? super T, ? extends R> fn) {
    Objects.requireNonNull(fn, "fn");
    int n = items.size();
    Object[] results = new Object[n];
    if (executor == null || n < 2) {
      for (int i = 0; i < n; i++) {
        results[i] = fn.apply(items.get(i));
      }
      return asList(results);
    }
    AtomicInteger next = new AtomicInteger();
    CountDownLatch finished = new CountDownLatch(n);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Runnable claim = () -> {
      for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
        try {
          results[i] = fn.apply(items.get(i));
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        } finally {
          finished.countDown();
        }
      }
    };
    for (int h = 0; h < Math.min(helpers, n - 1); h++) {
      try {
        executor.execute(claim);
      } catch (RejectedExecutionException e) {
        break; // busy or closed: the caller claims the rest
      }
    }
    claim.run();
    awaitClaimed(finished);
    Throwable t = failure.get();
    if (t instanceof RuntimeException r) {
      throw r;
    }
    if (t instanceof Error e) {
      throw e;
    }
    if (t != null) {
      throw new IllegalStateException(t);
    }
    return asList(results);
  }

  /**
   * Starts {@code operation} on a helper and returns its future, or empty when there is no helper
   * or every helper is busy (the caller then does the work itself when it needs the answer). The
   * operation runs once, on whichever thread runs the task first: a helper, or a holder that calls
   * {@link RunnableFuture#run} before a helper took it (the helper then skips it). Whoever holds
   * it may wait on it.
   */
  public <R> Optional<RunnableFuture<R>> tryStart(
      Callable<R> operation) {
    Objects.requireNonNull(operation, "operation");
    if (executor == null) {
      return Optional.empty();
    }
    FutureTask<R> task = new FutureTask<>(operation);
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      return Optional.empty();
    }
    return Optional.of(task);
  }

  /** Waits for items helpers claimed; an interrupt is kept for the caller, not acted on here. */
  private static void awaitClaimed(CountDownLatch finished) {
    boolean interrupted = false;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(MAX_WAIT_SECONDS);
    try {
      while (true) {
        try {
          long left = deadline - System.nanoTime();
          if (finished.await(Math.max(0, left), TimeUnit.NANOSECONDS)) {
            return;
          }
          throw new IllegalStateException(
              "signature helpers did not finish within " + MAX_WAIT_SECONDS + " s");
        } catch (InterruptedException e) {
          interrupted = true; // a claimed item is one short operation: finish it
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static <R> List<R> asList(Object[] results) {
    List<R> out = new ArrayList<>(results.length);
    for (Object r : results) {
      out.add((R) r);
    }
    return out;
  }

  /** Stops the helpers; a later {@link #map} runs on the caller alone. Called once by the owner. */
  @Override
  public void close() {
    if (executor != null) {
      executor.shutdown();
    }
  }
}
