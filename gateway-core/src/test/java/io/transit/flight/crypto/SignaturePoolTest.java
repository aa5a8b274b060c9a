package io.transit.flight.crypto;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SignaturePoolTest {
  private static final List<Integer> ITEMS = IntStream.range(0, 40).boxed().toList();

  /** Starts a task on the pool's only helper that runs until {@code release}, once it runs. */
  private static Future<Boolean> occupyTheOnlyHelper(SignaturePool pool, CountDownLatch release)
      throws InterruptedException {
    CountDownLatch running = new CountDownLatch(1);
    Future<Boolean> occupied = pool.tryStart(() -> {
      running.countDown();
      return release.await(30, TimeUnit.SECONDS);
    }).orElseThrow();
    assertTrue(running.await(10, TimeUnit.SECONDS));
    return occupied;
  }

  @Test
  void resultsKeepItemOrderAndHelpersShareTheWork() {
    Set<String> threads = ConcurrentHashMap.newKeySet();
    try (SignaturePool pool = SignaturePool.withHelpers(2)) {
      List<byte[]> out = pool.map(ITEMS, i -> {
        threads.add(Thread.currentThread().getName());
        return Digests.sha256(new byte[] {i.byteValue()});
      });
      assertEquals(ITEMS.size(), out.size());
      for (int i = 0; i < ITEMS.size(); i++) {
        assertArrayEquals(Digests.sha256(new byte[] {(byte) i}), out.get(i));
      }
    }
    assertTrue(threads.contains(Thread.currentThread().getName()), "the caller claims items");
  }

  @Test
  void busyHelpersLeaveTheWorkToTheCaller() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      // Occupy the only helper and fill its queue, so every later hand-off is refused.
      Future<Boolean> occupied = occupyTheOnlyHelper(pool, release);
      while (pool.tryStart(() -> true).isPresent()) {
        // filling the bounded queue
      }
      Set<String> threads = ConcurrentHashMap.newKeySet();
      List<Integer> out = pool.map(ITEMS, i -> {
        threads.add(Thread.currentThread().getName());
        return i * 2;
      });
      assertEquals(ITEMS.stream().map(i -> i * 2).toList(), out);
      assertEquals(Set.of(Thread.currentThread().getName()), threads);
      release.countDown();
      assertTrue(occupied.get(10, TimeUnit.SECONDS));
    }
  }

  @Test
  void aStartedTaskNoHelperTookRunsOnceOnTheThreadThatRunsItFirst() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger runs = new AtomicInteger();
    Set<String> ranOn = ConcurrentHashMap.newKeySet();
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      Future<Boolean> occupied = occupyTheOnlyHelper(pool, release);
      RunnableFuture<Integer> queued = pool.tryStart(() -> {
        ranOn.add(Thread.currentThread().getName());
        return runs.incrementAndGet();
      }).orElseThrow();
      queued.run(); // the helper is still blocked: the caller does the work
      assertTrue(queued.isDone());
      assertEquals(1, queued.get(10, TimeUnit.SECONDS));
      assertEquals(Set.of(Thread.currentThread().getName()), ranOn);
      release.countDown();
      assertTrue(occupied.get(10, TimeUnit.SECONDS));
      // The helper reaches the queued task after this one and skips it.
      assertEquals(7, pool.tryStart(() -> 7).orElseThrow().get(10, TimeUnit.SECONDS));
      assertEquals(1, runs.get());
    }
  }

  @Test
  void theFirstFailureReachesTheCallerAfterEveryClaimedItem() {
    try (SignaturePool pool = SignaturePool.withHelpers(2)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> pool.map(ITEMS, i -> {
            if (i == 17) {
              throw new IllegalArgumentException("item " + i);
            }
            return i;
          }));
      assertEquals("item 17", e.getMessage());
    }
  }

  @Test
  void inlineAndClosedPoolsRunOnTheCaller() {
    SignaturePool inline = SignaturePool.inline();
    assertTrue(inline.tryStart(() -> 1).isEmpty());
    assertEquals(List.of(0, 1, 2), inline.map(List.of(0, 1, 2), i -> i));
    SignaturePool closed = SignaturePool.withHelpers(2);
    closed.close();
    assertTrue(closed.tryStart(() -> 1).isEmpty());
    assertEquals(ITEMS, closed.map(ITEMS, i -> i));
  }
}
