package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.postgres.PostgresCluster;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two replicas' retention sweeps on one shared journal (a real PostgreSQL): the byte bound is
 * enforced once, not once per replica. Threads: each sweep runs on a thread of its own; every
 * wait is bounded.
 */
class ReplicatedRetentionTest {
  private static final long RESULT_BYTES = 10;
  private static final int RESULTS = 11;
  private static final long MAX_BYTES = 100; // one result too many
  @RegisterExtension
  static final PostgresCluster.PerClass CLUSTER = new PostgresCluster.PerClass();

  @TempDir Path segments;

  /**
   * Replica B's sweep has summed the retained bytes (one result over the bound) and is about to
   * read its page of oldest results when replica A's sweep starts. A must wait for B's page: had
   * A released the oldest result in between, B would have found the next one oldest, with its
   * sum still one over, and released it too.
   */
  @Test
  void aReleaseBetweenAnotherReplicasSumAndItsPageIsNotCountedTwice() throws Exception {
    String db = CLUSTER.get().createDatabase();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (PostgresJournal a = PostgresJournal.open(CLUSTER.get().settings(db));
        PostgresJournal b = PostgresJournal.open(CLUSTER.get().settings(db))) {
      seed(a);
      RetentionPolicy policy =
          new RetentionPolicy(Duration.ofDays(1), MAX_BYTES, Duration.ofDays(7));
      Retention retentionA = new Retention(a, new LocalSegmentStore(segments.resolve("a")),
          policy, () -> 2_000_000L, Duration.ofSeconds(2));
      AtomicBoolean first = new AtomicBoolean(true);
      Future<?>[] sweepA = new Future<?>[1];
      JournalStore interleaved = beforeFirstPage(b, () -> {
        if (first.getAndSet(false)) {
          sweepA[0] = threads.submit(retentionA::sweep);
          try {
            sweepA[0].get(2, TimeUnit.SECONDS);
          } catch (TimeoutException waiting) {
            // A waits for B's transaction: the outcome the lock is for.
          }
        }
      });
      Retention retentionB = new Retention(interleaved, new LocalSegmentStore(
          segments.resolve("b")), policy, () -> 2_000_000L, Duration.ofSeconds(2));
      Retention.Swept swept = threads.submit(retentionB::sweep).get(30, TimeUnit.SECONDS);
      Retention.Swept sweptA = (Retention.Swept) sweepA[0].get(30, TimeUnit.SECONDS);
      assertEquals(1, swept.released() + sweptA.released(), "one release between the two");
      assertEquals(MAX_BYTES, a.transaction(a::retainedBytes));
      assertEquals(RESULTS - 1, a.transaction(() -> a.oldestRetained(RESULTS)).size());
      assertFalse(a.transaction(() -> a.oldestRetained(RESULTS)).stream()
          .anyMatch(r -> r.finishedMillis() == 1_000), "the oldest is the one released");
      retentionA.close();
      retentionB.close();
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  /**
   * An operator's release on another replica ({@link EmbeddedEngine#release}) that comes between
   * a sweep's sum and its page waits for the page, as another replica's sweep does: had it
   * committed in between, the page would have found the next result oldest with its sum still one
   * over, and released that one too.
   */
  @Test
  void anOperatorsReleaseBetweenASweepsSumAndItsPageIsNotCountedTwice() throws Exception {
    String db = CLUSTER.get().createDatabase();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (PostgresJournal b = PostgresJournal.open(CLUSTER.get().settings(db))) {
      seed(b);
      long oldest = b.transaction(() -> b.oldestRetained(1)).get(0).correlation();
      // The operator's replica; its own sweeps find nothing past its bounds.
      EmbeddedEngine operator = EmbeddedEngine.open(segments.resolve("operator"),
          EngineOptions.defaults().withRetention(Duration.ofDays(36_500), 1L << 40,
              Duration.ofHours(1)),
          PostgresJournal.open(CLUSTER.get().settings(db)), List.of(),
          List.of(EngineTestSupport.fullRights()), new EngineTestSupport.TablePlanner());
      try {
        AtomicBoolean first = new AtomicBoolean(true);
        List<Future<Boolean>> release = new ArrayList<>();
        JournalStore interleaved = beforeFirstPage(b, () -> {
          if (first.getAndSet(false)) {
            release.add(threads.submit(() -> operator.release(oldest)));
            try {
              release.get(0).get(2, TimeUnit.SECONDS);
            } catch (TimeoutException waiting) {
              // The release waits for this page's transaction: the outcome the lock is for.
            }
          }
        });
        RetentionPolicy policy =
            new RetentionPolicy(Duration.ofDays(1), MAX_BYTES, Duration.ofDays(7));
        Retention retentionB = new Retention(interleaved, new LocalSegmentStore(
            segments.resolve("b")), policy, () -> 2_000_000L, Duration.ofSeconds(2));
        Retention.Swept swept = threads.submit(retentionB::sweep).get(30, TimeUnit.SECONDS);
        assertTrue(release.get(0).get(30, TimeUnit.SECONDS));
        retentionB.close();
        assertEquals(1, swept.released());
        assertEquals(MAX_BYTES, b.transaction(b::retainedBytes),
            "one result released in all: the operator's and the sweep's are the same");
        assertEquals(RESULTS - 1, b.transaction(() -> b.oldestRetained(RESULTS)).size());
      } finally {
        operator.close();
      }
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  /** Results finished at 1,000, 1,001, … ms, {@code RESULT_BYTES} each, none past the age. */
  private static void seed(JournalStore journal) throws Exception {
    byte[] digest = new byte[32];
    byte[] manifest = ResultManifest.getDefaultInstance().toByteArray();
    journal.transaction(() -> {
      for (int i = 0; i < RESULTS; i++) {
        long c = journal.allocateCorrelation();
        journal.insertAccepted(c, 1, i + 1, digest);
        assertTrue(journal.finish(QueryStatus.newBuilder().setCorrelation(c)
            .setPrincipal(1).setNamespace(i + 1).setState(QueryStatus.State.SUCCEEDED).build(),
            digest, manifest, RESULT_BYTES, 1_000 + i, 0));
      }
      return null;
    });
  }

  private interface Hook {
    void run() throws Exception;
  }

  /** {@code journal}, running {@code hook} before each read of a page of oldest results. */
  private static JournalStore beforeFirstPage(JournalStore journal, Hook hook) {
    return (JournalStore) Proxy.newProxyInstance(JournalStore.class.getClassLoader(),
        new Class<?>[] {JournalStore.class}, (proxy, method, args) -> {
          if (method.getName().equals("oldestRetained")) {
            hook.run();
          }
          try {
            return method.invoke(journal, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}
