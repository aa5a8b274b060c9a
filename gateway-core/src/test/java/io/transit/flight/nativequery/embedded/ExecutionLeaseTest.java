package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.crypto.Digests;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two engines opened on one journal file and one segment directory act as two replicas
 * (docs/native-engine.md "Execution leases"): a stalled replica's query is taken over once its
 * lease expires and its late result is fenced, never published; a replica that keeps renewing
 * keeps its query; a closing replica renews through its drain, cancels what is still inside
 * DuckDB after it, and gives its leases up.
 */
class ExecutionLeaseTest {
  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;
  private final List<EmbeddedEngine> engines = new ArrayList<>();

  private static final String SQL = "project";
  /** SUM over a Table of {@link #LINKS} hard links to the demo file: seconds inside DuckDB. */
  private static final String LONG_SUM = "long sum";
  private static final int LINKS = 500;
  private static final long LINKED_ID = 90;
  private static final TablePlanner PLANNER = new TablePlanner().put(SQL, new QueryPlan(
      List.of(column("id", LogicalType.INT64, false), column("a", LogicalType.INT64, false)),
      null, 1000L, false))
      .put(LONG_SUM, new QueryPlan(
          List.of(new QueryPlan.Output("s", true, QueryPlan.OutputKind.SUM, "a",
              LogicalType.INT64)),
          new QueryPlan.Comparison("c", QueryPlan.Op.LT,
              new QueryPlan.Literal(LogicalType.INT64, 0L)),
          null, true));
  private static final Duration LEASE = Duration.ofSeconds(1);
  private static final Duration SCAN = Duration.ofMillis(200);
  private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);

  @BeforeAll
  static void demo() throws Exception {
    demo = DemoData.generate(data);
  }

  @AfterEach
  void close() throws Exception {
    // Every engine closes even when one of them still holds buffers.
    AssertionError leak = null;
    for (EmbeddedEngine e : engines) {
      try {
        closeWithoutLeaks(e);
      } catch (AssertionError x) {
        if (leak == null) {
          leak = x;
        } else {
          leak.addSuppressed(x);
        }
      }
    }
    if (leak != null) {
      throw leak;
    }
  }

  /** Test faults: hold each query back {@code delayMillis}; renew leases or not (a stall). */
  private static CommandFaults stall(long delayMillis, boolean renew) {
    return stallUntil(() -> true, delayMillis, renew);
  }

  /**
   * Test faults: each query's execution thread first waits (bounded) until {@code until} holds,
   * then {@code delayMillis}; leases are renewed or not (a stalled replica renews nothing).
   */
  private static CommandFaults stallUntil(BooleanSupplier until, long delayMillis, boolean renew) {
    return faults(() -> {
      long end = System.nanoTime() + WAIT_NANOS;
      while (!until.getAsBoolean() && System.nanoTime() - end < 0) {
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return 0;
        }
      }
      return delayMillis;
    }, renew);
  }

  /** Test faults: each query's execution thread first runs {@code delay}, which says how long. */
  private static CommandFaults faults(java.util.function.LongSupplier delay, boolean renew) {
    return new CommandFaults() {
      @Override
      public boolean fail(Point point, NativeCommand command) {
        return false;
      }

      @Override
      public long executionDelayMillis() {
        return delay.getAsLong();
      }

      @Override
      public boolean renewLeases() {
        return renew;
      }

      // The stall is on the execution thread: an early run would skip it and could commit the
      // result with the submit, leaving no attempt for another replica to take over.
      @Override
      public boolean runsEarly() {
        return false;
      }
    };
  }

  private EmbeddedEngine open(CommandFaults faults, Duration lease, Duration scan)
      throws Exception {
    return open(faults, lease, scan, Duration.ofSeconds(10), demo);
  }

  private EmbeddedEngine open(CommandFaults faults, Duration lease, Duration scan,
      Duration shutdownWait, List<Publication> publications) throws Exception {
    EngineOptions options = EngineOptions.defaults()
        .withFaults(faults)
        .withLease(lease, scan)
        .withShutdownWait(shutdownWait)
        // No sweep while the test runs: each engine's sweep guards only its own writers.
        .withRetention(Duration.ofDays(1), 1L << 40, Duration.ofHours(1));
    EmbeddedEngine e =
        EmbeddedEngine.open(state, options, publications, List.of(fullRights()), PLANNER);
    engines.add(e);
    return e;
  }

  private long submit(EmbeddedEngine e) {
    return admit(e, e.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), SQL, roomyBudgets()));
  }

  @Test
  void aStalledReplicaIsTakenOverAndItsLateResultIsFenced() throws Exception {
    AtomicReference<EmbeddedEngine> replicaA = new AtomicReference<>();
    // A accepts and claims, then stalls without renewing until B has claimed the query; it then
    // runs attempt 1 to its end while B holds attempt 2.
    EmbeddedEngine a = open(stallUntil(() -> attemptIs(2), 0, false), LEASE, SCAN);
    replicaA.set(a);
    // B runs attempt 2 only after A's late finish was refused, so that finish meets the fence.
    EmbeddedEngine b = open(stallUntil(() -> replicaA.get().fencedResults() == 1, 0, true),
        LEASE, SCAN);
    long correlation = submit(a);
    long accepted = System.nanoTime();
    assertEquals(List.of(a.leaseOwner(), 1L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));

    // A's own waiter sees B's result. A's monitor last fired when A's fenced run ended, before B
    // ran: only the wait's journal poll can see B's status.
    QueryStatus seenByA = a.awaitQuery(access(), correlation, System.nanoTime() + WAIT_NANOS);
    long toResultMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - accepted);
    assertEquals(QueryStatus.State.SUCCEEDED, seenByA.getState());
    assertEquals(1000, seenByA.getTotalRows());
    assertEquals(1, a.fencedResults(), "A's finish with attempt 1 was refused");
    assertEquals(0, b.fencedResults());
    assertEquals(List.of(b.leaseOwner(), 2L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));
    QueryStatus published = b.awaitQuery(access(), correlation, System.nanoTime());
    assertEquals(seenByA, published);
    ResultManifest manifest = ResultManifest.parseFrom(a.readManifest(access(), correlation));
    assertEquals(1000, manifest.getTotalRows());
    assertArrayEquals(b.readManifest(access(), correlation), manifest.toByteArray());
    // Deterministic execution: both attempts encode the same segments. This result is small, so
    // it is kept inline with its manifest (one commit), and A's fenced attempt left nothing: no
    // inline row of its own, no segment file the published manifest does not name.
    Set<String> named = new TreeSet<>();
    for (SegmentRef ref : manifest.getSegmentsList()) {
      named.add(Digests.hex(ref.getSha256().toByteArray()));
    }
    assertTrue(!named.isEmpty());
    Path segmentDir = state.resolve("segments");
    if (Files.isDirectory(segmentDir)) {
      try (Stream<Path> files = Files.list(segmentDir)) {
        Set<String> stored = files.map(f -> f.getFileName().toString())
            .collect(Collectors.toCollection(TreeSet::new));
        assertTrue(named.containsAll(stored), "unnamed segment files: " + stored);
      }
    }
    for (int i = 0; i < manifest.getSegmentsCount(); i++) {
      byte[] bytes = b.readSegment(access(), correlation, i, Long.MAX_VALUE);
      assertEquals(Digests.hex(manifest.getSegments(i).getSha256().toByteArray()),
          Digests.hex(Digests.sha256(bytes)));
    }
    System.out.printf("takeover: result %d ms after acceptance (lease %d ms, scan %d ms)%n",
        toResultMillis, LEASE.toMillis(), SCAN.toMillis());
    await("A's allocator", a::allocatedBytes, 0);
    await("B's allocator", b::allocatedBytes, 0);
  }

  /** True once the only query's lease row shows {@code attempt} (read as an operator would). */
  private boolean attemptIs(long attempt) {
    try {
      return SqliteJournalLeaseTest.lease(journalFile(), 1).get(1) == attempt;
    } catch (Exception | AssertionError e) {
      return false;
    }
  }

  @Test
  void renewalsKeepALongQueryFromBeingTakenOver() throws Exception {
    // 2.5 leases of execution; B scans many times a lease and never finds it expired. A 3 s
    // lease: a renewal (every second) would have to be two seconds late to let B in.
    Duration lease = Duration.ofSeconds(3);
    EmbeddedEngine a = open(stall(7_500, true), lease, SCAN);
    EmbeddedEngine b = open(CommandFaults.NONE, lease, SCAN);
    long correlation = submit(a);
    QueryStatus done = b.awaitQuery(access(), correlation, System.nanoTime() + WAIT_NANOS);
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState());
    assertEquals(List.of(a.leaseOwner(), 1L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));
    assertEquals(0, a.fencedResults());
    assertEquals(0, b.fencedResults());
    await("A's allocator", a::allocatedBytes, 0);
    await("B's allocator", b::allocatedBytes, 0);
  }

  @Test
  void aClosingReplicaGivesItsLeasesUpAndAnotherRunsThemAtOnce() throws Exception {
    // A's query would wait a minute; A closes first, giving the lease up.
    EmbeddedEngine a = open(stall(60_000, true), Duration.ofMinutes(5), Duration.ofMinutes(1));
    long correlation = submit(a);
    closeWithoutLeaks(a);
    engines.remove(a);
    // A five-minute lease: only the given-up lease lets B's open take the query over now.
    EmbeddedEngine b = open(CommandFaults.NONE, Duration.ofMinutes(5), Duration.ofMinutes(1));
    QueryStatus done = b.awaitQuery(access(), correlation, System.nanoTime() + WAIT_NANOS);
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState());
    assertEquals(List.of(b.leaseOwner(), 2L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));
    await("B's allocator", b::allocatedBytes, 0);
  }

  @Test
  void aClosingReplicaRenewsItsRunningQueryThroughTheDrainSoNoneTakesItOver() throws Exception {
    // A's query holds its execution thread (a stall close does not cut short) until released;
    // B scans every 200 ms. Without renewals A's lease would lapse a lease into the drain.
    Duration lease = Duration.ofSeconds(2);
    CountDownLatch stalled = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    EmbeddedEngine a = open(stallUntil(() -> {
      stalled.countDown();
      return release.get();
    }, 0, true), lease, SCAN);
    long correlation = submit(a);
    assertTrue(stalled.await(30, TimeUnit.SECONDS), "A's query never reached its stall");
    CompletableFuture<Void> closed = CompletableFuture.runAsync(a::close);
    EmbeddedEngine b = open(CommandFaults.NONE, lease, SCAN);
    Thread.sleep(lease.toMillis() * 9 / 4);
    assertFalse(closed.isDone(), "A's close still waits for its running query");
    assertEquals(List.of(a.leaseOwner(), 1L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2),
        "A still holds attempt 1 after more than a lease of its drain");
    release.set(true);
    closed.get(30, TimeUnit.SECONDS);
    engines.remove(a);
    // The query stopped at close's check (it had not executed): A gave it up, B runs it now.
    QueryStatus done = b.awaitQuery(access(), correlation, System.nanoTime() + WAIT_NANOS);
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState());
    assertEquals(List.of(b.leaseOwner(), 2L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));
    assertEquals(0, a.allocatedBytes());
    await("B's allocator", b::allocatedBytes, 0);
  }

  @Test
  void aCloseCancelsAQueryStillInsideDuckDbAndAnotherReplicaRunsItAfter() throws Exception {
    List<Publication> linked = linkedTable();
    // A waits 200 ms for its running query, then cancels it inside DuckDB.
    EmbeddedEngine a = open(CommandFaults.NONE, Duration.ofMinutes(5), Duration.ofMinutes(1),
        Duration.ofMillis(200), linked);
    long correlation = admit(a, a.nextSequence(PRINCIPAL),
        bundle(linked.get(linked.size() - 1).declaration(), LONG_SUM, roomyBudgets()));
    await("A's statements inside DuckDB", a::statementsInDuckDb, 1);
    a.close();
    engines.remove(a);
    assertTrue(a.executionStopped(), "A's close left its execution thread inside DuckDB");
    assertEquals(0, a.allocatedBytes());
    // Left ACCEPTED with its lease given up (expiry 0): the next open takes it over at once.
    assertEquals(List.of(a.leaseOwner(), 1L, 0L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation));

    EmbeddedEngine b = open(CommandFaults.NONE, Duration.ofMinutes(5), Duration.ofMinutes(1),
        Duration.ofSeconds(10), linked);
    QueryStatus done = b.awaitQuery(access(), correlation, System.nanoTime() + WAIT_NANOS);
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState());
    assertEquals(List.of(b.leaseOwner(), 2L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation).subList(0, 2));
    List<List<Cell>> rows = decode(b.readSegment(access(), correlation, 0, Long.MAX_VALUE),
        List.of("s"));
    assertEquals(LINKS * demoSum(), rows.get(0).get(0).value());
    await("B's allocator", b::allocatedBytes, 0);
  }

  @Test
  void aCloseThatCannotStopAnExecutionThreadKeepsItsLeaseAndItsPools() throws Exception {
    AtomicBoolean release = new AtomicBoolean();
    // The execution thread waits, deaf to interrupts, until released: neither the drain nor a
    // cancel inside DuckDB stops it (a thread stuck in native code or a slow store behaves so).
    CommandFaults deaf = faults(() -> {
      long end = System.nanoTime() + WAIT_NANOS;
      while (!release.get() && System.nanoTime() - end < 0) {
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      return 0;
    }, true);
    EmbeddedEngine a = open(deaf, Duration.ofMinutes(5), Duration.ofMinutes(1),
        Duration.ofMillis(200), demo);
    long correlation = submit(a);
    IllegalStateException e = assertThrows(IllegalStateException.class, a::close);
    assertTrue(e.getMessage().contains("execution threads still running"), e.getMessage());
    // Not given up (expiry 0): no other replica starts the query while it may still run here.
    List<Long> lease = SqliteJournalLeaseTest.lease(journalFile(), correlation);
    assertEquals(List.of(a.leaseOwner(), 1L), lease.subList(0, 2));
    assertTrue(lease.get(2) > System.currentTimeMillis(), "the lease lapses in its own time");
    // Released, the thread meets the close and records nothing: the journal it still used was
    // open, and the query stays ACCEPTED for the next open or another replica.
    release.set(true);
    await("A's execution thread", () -> a.executionStopped() ? 1 : 0, 1);
    assertEquals(QueryStatus.State.ACCEPTED,
        a.awaitQuery(access(), correlation, System.nanoTime()).getState());
    // Nothing runs any more: a second close completes, frees everything and gives the lease up.
    engines.remove(a);
    closeWithoutLeaks(a);
    assertEquals(List.of(a.leaseOwner(), 1L, 0L),
        SqliteJournalLeaseTest.lease(journalFile(), correlation));
  }

  /** The demo Tables and one more: {@link #LINKS} hard links to the primitive Table's file. */
  private static List<Publication> linkedTable() throws Exception {
    Publication primitive = demo.get(0);
    Path dir = data.resolve("linked");
    List<Path> files = new ArrayList<>();
    Files.createDirectories(dir);
    for (int i = 0; i < LINKS; i++) {
      Path link = dir.resolve("part-" + i + ".parquet");
      if (!Files.exists(link)) {
        Files.createLink(link, primitive.files().get(0));
      }
      files.add(link);
    }
    TableDeclaration declaration = primitive.declaration().toBuilder()
        .setTable("demo_linked").setObjectId(LINKED_ID).build();
    List<Publication> all = new ArrayList<>(demo);
    all.add(new Publication(declaration, files, "parquet"));
    return all;
  }

  /** {@link #LONG_SUM} over the primitive Table's one file, by DuckDB directly. */
  private static long demoSum() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement st = c.createStatement();
        ResultSet r = st.executeQuery("SELECT SUM(a) FROM read_parquet('"
            + demo.get(0).files().get(0).toAbsolutePath() + "') WHERE c < 0")) {
      assertTrue(r.next());
      return r.getLong(1);
    }
  }

  private Path journalFile() {
    return state.resolve("journal.sqlite");
  }
}
