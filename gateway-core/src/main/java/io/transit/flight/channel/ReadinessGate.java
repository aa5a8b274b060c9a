package io.transit.flight.channel;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The producer's backpressure wait (T_caller): parks until a readiness condition holds, woken by
 * {@link #wake()} from any thread (gRPC's on-ready callback, a cancel, a close, a finished batch).
 *
 * <p>Wake-ups are counted rather than remembered as a flag: the waiter reads the count before it
 * evaluates readiness, so a wake-up between the evaluation and the park is never lost, and a
 * readiness that flips between two checks only costs one more loop (never an "invalid state"
 * failure). The deadline is taken from {@link System#nanoTime()} once, so spurious wake-ups do
 * not extend the budget. The lock guards only the condition signal; no readiness check or other
 * call runs under it.
 */
final class ReadinessGate {
  private final long budgetNanos;
  private final AtomicLong wakeups = new AtomicLong();
  private final ReentrantLock lock = new ReentrantLock(); // leaf: guards the signal only
  private final Condition changed = lock.newCondition();

  ReadinessGate(long budgetNanos) {
    this.budgetNanos = budgetNanos;
  }

  /** The whole wait budget, in nanoseconds. */
  long budgetNanos() {
    return budgetNanos;
  }

  /**
   * T_caller: returns {@code true} once {@code ready} holds, {@code false} when the budget ran
   * out first. {@code failFast} runs before every readiness check and throws to abandon the wait
   * (cancel, close).
   *
   * @throws GatewayException {@code flight.interrupted} when the waiting thread is interrupted
   */
  boolean await(Runnable failFast, BooleanSupplier ready) {
    long deadline = System.nanoTime() + budgetNanos;
    while (true) {
      long seen = wakeups.get();
      failFast.run();
      if (ready.getAsBoolean()) {
        return true;
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return false;
      }
      lock.lock();
      try {
        while (wakeups.get() == seen && remaining > 0) {
          remaining = changed.awaitNanos(remaining);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new GatewayException(
            Cause.CANCELLED, "flight.interrupted", "the producer was interrupted in the gate", e);
      } finally {
        lock.unlock();
      }
    }
  }

  /** Any thread: wakes the waiter so it re-checks. Holds the lock only to signal. */
  void wake() {
    wakeups.incrementAndGet();
    lock.lock();
    try {
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
