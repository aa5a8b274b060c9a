package io.transit.flight.admission;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Bounds admissions in flight, per gateway and per caller, without ever blocking: {@link
 * #tryAcquire} either grants a {@link Permit} at once or throws {@code ADMISSION_BUSY} ({@code
 * RESOURCE_EXHAUSTED}, {@code admission.busy}, facts {@code bound}, {@code limit}, {@code required}), which the caller reports before any native command
 * is sent.
 *
 * <p>Thread-safe. Any RPC thread may acquire; any thread may close a permit. Both counters sit
 * under the one monitor {@code this}, held only for O(1) map updates, so the gateway-wide and
 * per-caller checks are taken together and a refused caller never holds a gateway slot even
 * briefly. A permit's {@link AtomicBoolean} makes close idempotent: a second close releases nothing.
 */
public final class AdmissionLimiter {
  private final int maxInFlight;
  private final int maxPerCaller;

  // Guarded by this.
  private int inFlight;
  // Guarded by this. Caller key → admissions in flight (> 0); entries removed at zero.
  private final Map<Long, Integer> perCaller = new HashMap<>();

  public AdmissionLimiter(int maxInFlight, int maxPerCaller) {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight: " + maxInFlight + " (expected: >= 1)");
    }
    if (maxPerCaller < 1) {
      throw new IllegalArgumentException("maxPerCaller: " + maxPerCaller + " (expected: >= 1)");
    }
    this.maxInFlight = maxInFlight;
    this.maxPerCaller = maxPerCaller;
  }

  public static AdmissionLimiter of(AdmissionConfig config) {
    return new AdmissionLimiter(config.maxInFlight(), config.maxInFlightPerCaller());
  }

  /**
   * Takes one gateway slot and one slot of {@code callerKey} (the caller's dedicated native
   * principal), or throws {@code ADMISSION_BUSY} naming the exhausted limit. Never blocks.
   */
  public Permit tryAcquire(long callerKey) {
    synchronized (this) {
      if (inFlight >= maxInFlight) {
        throw busy("gateway", maxInFlight);
      }
      int mine = perCaller.getOrDefault(callerKey, 0);
      if (mine >= maxPerCaller) {
        throw busy("caller", maxPerCaller);
      }
      inFlight++;
      perCaller.put(callerKey, mine + 1);
    }
    return new Permit(callerKey);
  }

  /** Admissions in flight in this gateway (a snapshot). */
  public synchronized int inFlight() {
    return inFlight;
  }

  /** Admissions in flight for {@code callerKey} (a snapshot). */
  public synchronized int inFlight(long callerKey) {
    return perCaller.getOrDefault(callerKey, 0);
  }

  private synchronized void release(long callerKey) {
    inFlight--;
    int mine = perCaller.get(callerKey) - 1;
    if (mine == 0) {
      perCaller.remove(callerKey);
    } else {
      perCaller.put(callerKey, mine);
    }
  }

  /** Names the share that is full ({@code bound}: gateway or caller), its size and one more. */
  private static GatewayException busy(String bound, int max) {
    return GatewayException.of(
            Cause.ADMISSION_BUSY, "admission.busy", "too many admissions in flight; retry later")
        .with("bound", bound)
        .with("limit", max)
        .with("required", (long) max + 1);
  }

  /** One admission slot; closing it (once or more, from any thread) frees the slot once. */
  public final class Permit implements AutoCloseable {
    private final long callerKey;
    private final AtomicBoolean closed = new AtomicBoolean();

    private Permit(long callerKey) {
      this.callerKey = callerKey;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        release(callerKey);
      }
    }
  }
}
