package io.transit.flight.server.request;

import io.transit.flight.server.ops.LoggedText;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client faults (malformed requests) on {@code transit.client_fault}: one bounded line, never a
 * stack trace, at most one per caller per interval. Later faults of that caller within the
 * interval are counted and reported with its next line. A hostile caller therefore grows the
 * log by at most one line per interval, whatever it sends.
 *
 * <p>Threads: any gRPC thread; one lock guards the per-caller windows (held for a map lookup).
 * The map keeps the {@value #MAX_CALLERS} most recently faulting callers, so its size is bounded.
 */
public final class ClientFaultLog {
  static final int MAX_CALLERS = 1024;
  /** Longest logged code or method text; anything longer is cut. */
  private static final int MAX_FIELD = 96;
  private static final Logger log = LoggerFactory.getLogger("transit.client_fault");

  private final long intervalNanos;
  private final LongSupplier nanoTime;
  private final Object lock = new Object();
  // @GuardedBy("lock"): caller -> {window start nanos, suppressed count}
  private final Map<String, long[]> windows = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
      return size() > MAX_CALLERS;
    }
  };

  public ClientFaultLog(long intervalNanos) {
    this(intervalNanos, System::nanoTime);
  }

  /** With the monotonic clock {@code nanoTime} (tests: a clock they move). */
  ClientFaultLog(long intervalNanos, LongSupplier nanoTime) {
    if (intervalNanos <= 0) {
      throw new IllegalArgumentException("intervalNanos: " + intervalNanos + " (expected: > 0)");
    }
    this.intervalNanos = intervalNanos;
    this.nanoTime = nanoTime;
  }

  /**
   * Records one fault of {@code caller} (a name, never a credential) on {@code method}; true
   * when it was logged, false when it was only counted.
   */
  public boolean fault(String caller, String method, String code) {
    long now = nanoTime.getAsLong();
    long suppressed;
    synchronized (lock) {
      long[] w = windows.get(caller);
      if (w != null && now - w[0] < intervalNanos) {
        w[1]++;
        return false;
      }
      suppressed = w != null ? w[1] : 0;
      windows.put(caller, new long[] {now, 0});
    }
    log.atWarn().addKeyValue("caller", cut(caller)).addKeyValue("method", cut(method))
        .addKeyValue("code", cut(code)).addKeyValue("suppressed", suppressed)
        .log("malformed request refused");
    return true;
  }

  private static String cut(String s) {
    return LoggedText.of(s, MAX_FIELD); // a method path may be the peer's own text
  }
}
