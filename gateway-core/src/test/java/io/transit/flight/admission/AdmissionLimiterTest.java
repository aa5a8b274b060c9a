package io.transit.flight.admission;

import static org.junit.jupiter.api.Assertions.*;

import io.grpc.Status;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AdmissionLimiterTest {

  @Test
  void perCallerLimitRefusesOnlyThatCaller() {
    AdmissionLimiter limiter = new AdmissionLimiter(4, 2);
    AdmissionLimiter.Permit a1 = limiter.tryAcquire(1);
    AdmissionLimiter.Permit a2 = limiter.tryAcquire(1);
    GatewayException busy = assertThrows(GatewayException.class, () -> limiter.tryAcquire(1));
    assertEquals(Cause.ADMISSION_BUSY, busy.kind());
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, busy.kind().code());
    assertEquals("admission.busy", busy.code());
    assertEquals("caller", busy.facts().get("bound"));
    assertEquals(2, busy.facts().get("limit"));
    assertEquals(3L, busy.facts().get("required"));
    try (AdmissionLimiter.Permit b = limiter.tryAcquire(2)) {
      assertEquals(3, limiter.inFlight());
    }
    a1.close();
    limiter.tryAcquire(1).close();
    a2.close();
    assertEquals(0, limiter.inFlight());
    assertEquals(0, limiter.inFlight(1));
  }

  @Test
  void gatewayLimitRefusesEveryCallerAndARefusalHoldsNoSlot() {
    AdmissionLimiter limiter = new AdmissionLimiter(2, 2);
    AdmissionLimiter.Permit a = limiter.tryAcquire(1);
    AdmissionLimiter.Permit b = limiter.tryAcquire(2);
    GatewayException busy = assertThrows(GatewayException.class, () -> limiter.tryAcquire(3));
    assertEquals("gateway", busy.facts().get("bound"));
    assertEquals(2, busy.facts().get("limit"));
    assertEquals(3L, busy.facts().get("required"));
    assertEquals(0, limiter.inFlight(3));
    a.close();
    limiter.tryAcquire(3).close();
    b.close();
    assertEquals(0, limiter.inFlight());
  }

  @Test
  void closingTwiceReleasesOnce() {
    AdmissionLimiter limiter = new AdmissionLimiter(2, 1);
    AdmissionLimiter.Permit a = limiter.tryAcquire(1);
    AdmissionLimiter.Permit b = limiter.tryAcquire(2);
    a.close();
    a.close();
    assertEquals(1, limiter.inFlight());
    assertEquals(1, limiter.inFlight(2));
    b.close();
  }

  @Test
  void concurrentCallersNeverExceedEitherLimit() throws Exception {
    int maxInFlight = 3;
    int maxPerCaller = 2;
    AdmissionLimiter limiter = new AdmissionLimiter(maxInFlight, maxPerCaller);
    AtomicInteger total = new AtomicInteger();
    AtomicInteger[] perCaller = {new AtomicInteger(), new AtomicInteger()};
    AtomicInteger violations = new AtomicInteger();
    AtomicInteger granted = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(6);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> futures = new ArrayList<>();
    for (int t = 0; t < 6; t++) {
      int caller = t % 2;
      futures.add(pool.submit(() -> {
        start.await(10, TimeUnit.SECONDS);
        for (int i = 0; i < 2000; i++) {
          try (AdmissionLimiter.Permit p = limiter.tryAcquire(caller)) {
            granted.incrementAndGet();
            if (total.incrementAndGet() > maxInFlight
                | perCaller[caller].incrementAndGet() > maxPerCaller) {
              violations.incrementAndGet();
            }
            perCaller[caller].decrementAndGet();
            total.decrementAndGet();
          } catch (GatewayException busy) {
            assertEquals("admission.busy", busy.code());
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : futures) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    assertEquals(0, violations.get());
    assertTrue(granted.get() > 0);
    assertEquals(0, limiter.inFlight());
  }
}
