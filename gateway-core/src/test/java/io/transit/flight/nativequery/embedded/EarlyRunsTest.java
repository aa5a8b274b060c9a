package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link EarlyRuns}' bookkeeping under concurrent sending threads. */
class EarlyRunsTest {
  private static final byte[] BUNDLE = {1, 2, 3};
  private static final byte[] SHA = new byte[32];

  /**
   * A retry overlapping its first call offers the same namespace twice at once: one run starts,
   * and the other offer finds it (a second would hide the first, which then could be neither
   * handed its query nor withdrawn, and would keep a permit for nothing).
   */
  @Test
  void twoOffersOfOneNamespaceAtOnceStartOneRun() throws Exception {
    EarlyRuns runs = new EarlyRuns(4);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 10000; round++) {
        long namespace = round;
        CyclicBarrier together = new CyclicBarrier(2);
        List<Future<Optional<EarlyRuns.Early>>> offers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
          offers.add(threads.submit(() -> {
            together.await(10, TimeUnit.SECONDS);
            return runs.offer(7, namespace, BUNDLE, SHA, false);
          }));
        }
        List<EarlyRuns.Early> started = new ArrayList<>();
        for (Future<Optional<EarlyRuns.Early>> f : offers) {
          f.get(10, TimeUnit.SECONDS).ifPresent(started::add);
        }
        assertEquals(1, started.size(), "round " + round);
        assertEquals(1, runs.running(), "round " + round);
        runs.finished(started.get(0));
        assertEquals(0, runs.running());
      }
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
