package io.transit.flight.admission;

import static io.transit.flight.admission.Fixtures.*;
import static org.junit.jupiter.api.Assertions.*;

import io.grpc.Status;
import io.transit.flight.diagnostic.GatewayException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Two admissions of one principal whose native sequence ranges overlap: exactly one wins. */
class AdmissionConcurrencyTest {
  private static final Set<Status.Code> LOSER_CODES =
      Set.of(Status.Code.ABORTED, Status.Code.FAILED_PRECONDITION);

  @Test
  void overlappingRangesOfOnePrincipalAdmitExactlyOne() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 20; round++) {
        // Same first sequence in even rounds; B starting inside A's range in odd rounds.
        long firstB = round % 2 == 0 ? 1 : 3;
        InMemoryNativeClient engine = new InMemoryNativeClient();
        engine.register(PRINCIPAL, key().publicKey(), EPOCH, 1);
        AdmissionLimiter limiter = new AdmissionLimiter(8, 4);
        AdmissionService service =
            new AdmissionService(engine, limiter, new AdmissionConfig(8, 4, 64));
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Admitted>> results = new ArrayList<>();
        for (Object[] job : new Object[][] {{1L, "SELECT id FROM trips"}, {firstB, "SELECT fare FROM trips"}}) {
          AdmissionRequest request =
              AdmissionServiceTest.request((Long) job[0], (String) job[1]);
          results.add(pool.submit(() -> {
            assertTrue(start.await(10, TimeUnit.SECONDS));
            return service.admit(request);
          }));
        }
        start.countDown();
        int admitted = 0;
        for (Future<Admitted> f : results) {
          try {
            f.get(30, TimeUnit.SECONDS);
            admitted++;
          } catch (java.util.concurrent.ExecutionException e) {
            GatewayException g = assertInstanceOf(GatewayException.class, e.getCause());
            assertTrue(LOSER_CODES.contains(g.kind().code()), g.code());
          }
        }
        assertEquals(1, admitted, "round " + round);
        assertEquals(1, engine.executions(), "round " + round);
        assertEquals(0, limiter.inFlight());
      }
    } finally {
      pool.shutdown();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
