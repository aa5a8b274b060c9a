package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.PRINCIPAL;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.command;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.fullRights;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.sign;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.postgres.PostgresCluster;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.SignedCommand;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two engines — two replicas of one deployment, each with its own state directory — admit one
 * principal's commands against one PostgreSQL journal from several threads each. The
 * principal's row lock decides: every sequence is recorded exactly once, none is skipped, a
 * loser at a used sequence is ABORTED ({@code NAMESPACE_CONFLICT}), a sequence ahead is
 * FAILED_PRECONDITION ({@code SEQUENCE_GAP}), and a resend of the winner's bytes to either
 * replica replays its outcome byte for byte.
 */
class ReplicatedAdmissionTest {
  private static final int THREADS_PER_REPLICA = 2;
  private static final int THREADS = 2 * THREADS_PER_REPLICA;
  @RegisterExtension
  static final PostgresCluster.PerClass CLUSTER = new PostgresCluster.PerClass();

  @TempDir Path stateA;
  @TempDir Path stateB;
  private String database;
  private EmbeddedEngine replicaA;
  private EmbeddedEngine replicaB;

  @BeforeEach
  void openReplicas() throws Exception {
    database = CLUSTER.get().createDatabase();
    replicaA = open(stateA);
    replicaB = open(stateB);
  }

  private EmbeddedEngine open(Path state) throws Exception {
    return EmbeddedEngine.open(state, EngineOptions.defaults(),
        PostgresJournal.open(CLUSTER.get().settings(database)), List.of(), List.of(fullRights()),
        new EngineTestSupport.TablePlanner());
  }

  @AfterEach
  void closeReplicas() {
    if (replicaA != null) {
      replicaA.close();
    }
    if (replicaB != null) {
      replicaB.close();
    }
  }

  private EmbeddedEngine replica(int thread) {
    return thread < THREADS_PER_REPLICA ? replicaA : replicaB;
  }

  /** A begin at {@code sequence} whose bytes differ per {@code thread}. */
  private static SignedCommand begin(long sequence, int thread) {
    byte[] sha = new byte[32];
    Arrays.fill(sha, (byte) thread);
    return sign(command(sequence, sequence).setBegin(BeginUpload.newBuilder()
        .setBundleBytes(100 + thread).setPartCount(1).setBundleSha256(ByteString.copyFrom(sha))));
  }

  private static boolean aborted(GatewayException e) {
    return e.kind() == Cause.NAMESPACE_CONFLICT && e.kind().code() == Status.Code.ABORTED;
  }

  @Test
  void racingReplicasRecordEachSequenceOnceAndLosersAreAborted() throws Exception {
    int rounds = 12;
    CyclicBarrier barrier = new CyclicBarrier(THREADS);
    long[][] seen = new long[rounds][THREADS];
    CommandOutcome[][] outcomes = new CommandOutcome[rounds][THREADS];
    GatewayException[][] failures = new GatewayException[rounds][THREADS];
    SignedCommand[][] sent = new SignedCommand[rounds][THREADS];
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          for (int r = 0; r < rounds; r++) {
            barrier.await(30, TimeUnit.SECONDS);
            long next = replica(thread).nextSequence(PRINCIPAL);
            seen[r][thread] = next;
            sent[r][thread] = begin(next, thread);
            barrier.await(30, TimeUnit.SECONDS); // every thread read before anyone sends
            try {
              outcomes[r][thread] = replica(thread).send(sent[r][thread]);
            } catch (GatewayException e) {
              failures[r][thread] = e;
            }
            barrier.await(30, TimeUnit.SECONDS);
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }

    long first = seen[0][0];
    for (int r = 0; r < rounds; r++) {
      int accepted = 0;
      int winner = -1;
      for (int t = 0; t < THREADS; t++) {
        assertEquals(first + r, seen[r][t], "round " + r + ": every replica read the same next");
        if (outcomes[r][t] != null) {
          assertEquals(CommandOutcome.Kind.ACCEPTED, outcomes[r][t].getKind());
          assertEquals(first + r, outcomes[r][t].getSequence());
          accepted++;
          winner = t;
        } else {
          assertTrue(aborted(failures[r][t]),
              "round " + r + " thread " + t + ": " + failures[r][t].kind());
        }
      }
      assertEquals(1, accepted, "round " + r + ": exactly one command wins its sequence");
      // The winner's bytes replay from either replica, byte for byte.
      for (EmbeddedEngine e : List.of(replicaA, replicaB)) {
        assertArrayEquals(outcomes[r][winner].toByteArray(),
            e.send(sent[r][winner]).toByteArray());
      }
    }
    assertContiguous(first, rounds);
    long next = first + rounds;
    assertEquals(next, replicaA.nextSequence(PRINCIPAL));
    assertEquals(next, replicaB.nextSequence(PRINCIPAL));
  }

  @Test
  void freeRunningReplicasLeaveNoGapAndNoDuplicate() throws Exception {
    int perThread = 15;
    long first = replicaA.nextSequence(PRINCIPAL);
    AtomicInteger conflicts = new AtomicInteger();
    List<Long> won = Collections.synchronizedList(new ArrayList<>());
    ConcurrentHashMap<Integer, Throwable> unexpected = new ConcurrentHashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          int mine = 0;
          while (mine < perThread) {
            long next = replica(thread).nextSequence(PRINCIPAL);
            try {
              CommandOutcome o = replica(thread).send(begin(next, thread));
              assertEquals(CommandOutcome.Kind.ACCEPTED, o.getKind());
              won.add(o.getSequence());
              mine++;
            } catch (GatewayException e) {
              if (aborted(e)) {
                conflicts.incrementAndGet();
              } else {
                unexpected.put(thread, e);
                return null;
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(180, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
    assertTrue(unexpected.isEmpty(), "only ABORTED conflicts are expected: " + unexpected);
    int total = THREADS * perThread;
    assertEquals(total, won.size());
    List<Long> sorted = new ArrayList<>(won);
    Collections.sort(sorted);
    for (int i = 0; i < total; i++) {
      assertEquals(first + i, sorted.get(i), "the accepted sequences are first.." + (total - 1));
    }
    assertContiguous(first, total);
    System.out.println("free-running replicas: " + total + " admitted, " + conflicts.get()
        + " ABORTED conflicts");

    // A sequence ahead is a gap on either replica, and nothing is recorded for it.
    long next = first + total;
    GatewayException gap = assertThrows(GatewayException.class,
        () -> replicaB.send(begin(next + 3, 0)));
    assertEquals(Cause.SEQUENCE_GAP, gap.kind());
    assertEquals(Status.Code.FAILED_PRECONDITION, gap.kind().code());
    assertEquals(next, replicaA.nextSequence(PRINCIPAL));
    assertContiguous(first, total);
  }

  @Test
  void aPrincipalHeldPastTheLockTimeoutIsUnavailableAndTheSameRetryIsAccepted() throws Exception {
    try (EmbeddedEngine impatient = impatientReplica();
        Connection holder = CLUSTER.get().connect(database)) {
      long next = impatient.nextSequence(PRINCIPAL);
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT * FROM principals WHERE principal = " + PRINCIPAL + " FOR UPDATE");
      }
      SignedCommand c = begin(next, 0);
      GatewayException e = assertThrows(GatewayException.class, () -> impatient.send(c));
      assertEquals(Cause.TRANSPORT, e.kind());
      assertEquals(Status.Code.UNAVAILABLE, e.kind().code());
      assertEquals("query.journal_unavailable", e.code());
      assertEquals("55P03", e.facts().get("sql_state"));
      holder.rollback();
      assertEquals(CommandOutcome.Kind.ACCEPTED, impatient.send(c).getKind(),
          "nothing was recorded: the same command is admitted on retry");
      assertArrayEquals(impatient.send(c).toByteArray(), replicaB.send(c).toByteArray());
      assertContiguous(next, 1);
    }
  }

  /**
   * A's begin is a deferred commit, which a crash of PostgreSQL could still take back. B's
   * answers that rest on it — the conflict of other bytes at that sequence, the next sequence
   * after it — leave B only after a durable commit of B's own, which covers A's record; B has no
   * deferred commit of its own that its flush would have waited for.
   */
  @Test
  void answersRestingOnAnotherReplicasDeferredRecordLeaveAfterADurableCommit() throws Exception {
    long next = replicaA.nextSequence(PRINCIPAL);
    assertEquals(CommandOutcome.Kind.ACCEPTED, replicaA.send(begin(next, 0)).getKind());
    long before = syncs();
    GatewayException conflict =
        assertThrows(GatewayException.class, () -> replicaB.send(begin(next, 1)));
    assertTrue(aborted(conflict), conflict.kind().toString());
    long afterConflict = syncs();
    assertTrue(afterConflict > before, "the conflict left after a durable commit of B's");
    assertEquals(next + 1, replicaB.nextSequence(PRINCIPAL));
    assertTrue(syncs() > afterConflict, "the next sequence left after a durable commit of B's");
  }

  /**
   * A refusal whose record committed but could not be made durable (the flush's commit waited
   * past the lock timeout) is an unknown outcome, never "nothing was recorded": the retry replays
   * the recorded refusal.
   */
  @Test
  void aRefusalRecordedButNotMadeDurableIsAnUnknownOutcome() throws Exception {
    try (EmbeddedEngine impatient = impatientReplica();
        Connection holder = CLUSTER.get().connect(database)) {
      long next = impatient.nextSequence(PRINCIPAL);
      // A part naming a namespace no upload holds: refused, and the refusal recorded.
      SignedCommand stray = sign(command(next, next + 1_000).setPart(
          io.transit.flight.proto.UploadPart.newBuilder().setIndex(0)
              .setData(ByteString.copyFromUtf8("x"))));
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        // Every sync's row at once: each session writes a row of its own (PostgresJournal.SYNC).
        s.execute("LOCK TABLE flushes IN EXCLUSIVE MODE");
      }
      GatewayException e = assertThrows(GatewayException.class, () -> impatient.send(stray));
      assertEquals(Cause.UNKNOWN_OUTCOME, e.kind());
      assertEquals("query.unknown_outcome", e.code());
      // Why, in a bounded fact: the SQLSTATE, not the server's text (which names the lock).
      assertEquals("55P03", e.facts().get("sql_state"));
      assertFalse(e.facts().containsKey("reason"), e.facts().toString());
      assertFalse(e.facts().toString().contains("lock timeout"), e.facts().toString());
      holder.rollback();
      CommandOutcome replayed = impatient.send(stray);
      assertEquals(CommandOutcome.Kind.REJECTED, replayed.getKind(), "the refusal was recorded");
      assertArrayEquals(replayed.toByteArray(), replicaB.send(stray).toByteArray());
    }
  }

  /** How many durable commits of their own the replicas have made ({@code JournalStore.sync}). */
  private long syncs() throws Exception {
    try (Connection c = CLUSTER.get().connect(database);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT sum(count) FROM flushes")) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  /** A third replica whose journal waits at most 300 ms for a row lock. */
  private EmbeddedEngine impatientReplica() throws Exception {
    io.transit.flight.nativequery.postgres.PostgresSettings d = CLUSTER.get().settings(database);
    return EmbeddedEngine.open(stateA.resolve("replica-c"), EngineOptions.defaults(),
        PostgresJournal.open(new io.transit.flight.nativequery.postgres.PostgresSettings(
            d.jdbcUrl(), d.user(), d.password(), 2, d.connectionTimeout(),
            java.time.Duration.ofMillis(300), d.statementTimeout(),
            d.idleInTransactionTimeout())),
        List.of(), List.of(fullRights()), new EngineTestSupport.TablePlanner());
  }

  /** The journal itself: {@code count} commands for the principal, at first..first+count-1. */
  private void assertContiguous(long first, int count) throws Exception {
    try (Connection c = CLUSTER.get().connect(database);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT count(*), count(DISTINCT sequence), min(sequence),"
            + " max(sequence) FROM commands WHERE principal = " + PRINCIPAL)) {
      assertTrue(r.next());
      assertEquals(count, r.getLong(1), "commands recorded");
      assertEquals(count, r.getLong(2), "no sequence recorded twice");
      assertEquals(first, r.getLong(3));
      assertEquals(first + count - 1, r.getLong(4), "no sequence skipped");
    }
  }
}
