package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Output;
import io.transit.flight.query.QueryPlan.OutputKind;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commit structure of one statement (docs/admission.md §10): the chain's commands, the submit
 * included, commit deferred, and a small result's segments with its manifest and terminal status
 * in one durable commit; a wait that answers before that commit syncs the journal first; what a
 * power loss leaves (a prefix of the journal ending at the last durable commit) resolves on retry
 * to one query per namespace.
 */
class OneCommitTest {
  @TempDir static Path data;
  @TempDir Path state;
  @TempDir Path lost;
  private static List<Publication> demo;
  private EmbeddedEngine engine;

  private static final String COUNT = "count";
  private static final String OTHER = "other count";
  private static final TablePlanner PLANNER = new TablePlanner()
      .put(COUNT, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_STAR, null, null),
          new Output("s", true, OutputKind.SUM, "a", LogicalType.INT64)), null, null, true))
      .put(OTHER, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_STAR, null, null)), null, null, true));

  @BeforeAll
  static void demo() throws Exception {
    demo = DemoData.generate(data);
  }

  @AfterEach
  void close() throws InterruptedException {
    if (engine != null) {
      closeWithoutLeaks(engine);
    }
  }

  private void open(Path dir) throws Exception {
    open(dir, 0);
  }

  /** Opens with every accepted query held back {@code heldMillis} before it runs (0: none). */
  private void open(Path dir, long heldMillis) throws Exception {
    if (engine != null) {
      EmbeddedEngine previous = engine;
      engine = null; // closed once, even when its check fails
      closeWithoutLeaks(previous);
    }
    // A lease far longer than any run: its renewal (a durable commit every lease/3) would
    // otherwise fall inside a statement a loaded machine takes seconds over.
    engine = EmbeddedEngine.open(dir,
        EngineOptions.defaults().withLease(Duration.ofMinutes(10), Duration.ofSeconds(5))
            .withFaults(new CommandFaults() {
              @Override
              public boolean fail(Point point, io.transit.flight.proto.NativeCommand command) {
                return false;
              }

              @Override
              public long executionDelayMillis() {
                return heldMillis;
              }
            }),
        demo, List.of(fullRights()), PLANNER);
  }

  private long durableCommits() {
    return ((SqliteJournal) engine.journal()).durableCommits();
  }

  private RequestBundle bundle(String sql) {
    return EngineTestSupport.bundle(demo.get(0).declaration(), sql, roomyBudgets());
  }

  private QueryStatus await(long correlation) throws InterruptedException {
    return engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
  }

  private static long segmentFiles(Path dir) throws IOException {
    try (Stream<Path> f = Files.list(dir.resolve("segments"))) {
      return f.count();
    }
  }

  @Test
  void aSmallStatementIsOneDurableCommitAndReadsBackFromTheJournal() throws Exception {
    open(state);
    long first = engine.nextSequence(PRINCIPAL);
    long before = durableCommits();
    long correlation = admit(engine, first, bundle(COUNT));
    QueryStatus done = await(correlation);
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState(), done.getMessage());
    assertEquals(before + 1, durableCommits(),
        "one terminal commit with the result in it, making the deferred chain durable with it");
    assertEquals(0, segmentFiles(state), "a one-row result writes no segment file");

    byte[] manifestBytes = engine.readManifest(access(), correlation);
    assertArrayEquals(done.getManifestSha256().toByteArray(), Digests.sha256(manifestBytes));
    ResultManifest m = ResultManifest.parseFrom(manifestBytes);
    assertEquals(1, m.getSegmentsCount());
    SegmentRef ref = m.getSegments(0);
    byte[] heap = engine.readSegment(access(), correlation, 0, 1L << 20);
    assertArrayEquals(ref.getSha256().toByteArray(), Digests.sha256(heap));
    List<List<Cell>> rows = decode(heap, List.of("n", "s"));
    assertEquals(List.of(new Cell(io.transit.flight.proto.CellState.CELL_UINT64_VALUE,
        DemoData.PRIMITIVE_ROWS)), rows.get(0).subList(0, 1));
    try (BufferAllocator reader = new RootAllocator(1 << 20)) {
      try (ArrowBuf buf = engine.readSegment(access(), correlation, 0, 1L << 20, reader)) {
        assertEquals(heap.length, buf.writerIndex());
        assertArrayEquals(ref.getSha256().toByteArray(), Digests.sha256(buf, buf.writerIndex()));
      }
      GatewayException bound = assertThrows(GatewayException.class,
          () -> engine.readSegment(access(), correlation, 0, ref.getBytes() - 1, reader).close());
      assertEquals(Cause.BUDGET_EXHAUSTED, bound.kind());
      assertEquals(0, reader.getAllocatedMemory());
    }
    // A second statement finds the journal durable already: again exactly one durable commit.
    long next = engine.nextSequence(PRINCIPAL);
    long second = durableCommits();
    assertEquals(QueryStatus.State.SUCCEEDED,
        await(admit(engine, next, bundle(OTHER))).getState());
    assertEquals(second + 1, durableCommits());
  }

  /**
   * A power loss after the submit's deferred commit, while its query waits to run: the accepted
   * query is lost with the chain (no answer had named it), and the retry runs the statement once.
   * A wait that answered "still running" first synced the journal, so after that the same power
   * loss keeps the query, and the retry resumes it under the same correlation.
   */
  @Test
  void aPowerLossBeforeTheTerminalCommitLosesOnlyAQueryNoAnswerNamed() throws Exception {
    open(state, 60_000);
    long first = engine.nextSequence(PRINCIPAL);
    Path wal = state.resolve("journal.sqlite-wal");
    engine.journal().flush();
    long durableEnd = Files.size(wal);
    long commits = durableCommits();
    List<SignedCommand> chain = chain(first, bundle(COUNT), 200);
    long correlation = sendAccepted(chain);
    assertEquals(commits, durableCommits(), "the whole chain, submit included, is deferred");
    assertTrue(Files.size(wal) > durableEnd, "the submit is in the log, past its synced end");
    Path unanswered = Files.createDirectories(lost.resolve("unanswered"));
    copyJournal(state, unanswered, durableEnd);

    // The caller's deadline passes while the query is held: its answer names the correlation,
    // so the journal is synced before it leaves.
    QueryStatus running = engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50));
    assertEquals(QueryStatus.State.ACCEPTED, running.getState());
    assertEquals(commits + 1, durableCommits(), "one sync before the answer");
    Path answered = Files.createDirectories(lost.resolve("answered"));
    copyJournal(state, answered, Files.size(wal));
    closeWithoutLeaks(engine);
    engine = null;

    open(unanswered);
    assertEquals(first, engine.nextSequence(PRINCIPAL), "the unsynced chain is gone");
    assertEquals(0, queriesAt(unanswered, first));
    long retried = sendAccepted(chain);
    assertEquals(QueryStatus.State.SUCCEEDED, await(retried).getState());
    assertEquals(1, queriesAt(unanswered, first), "one query for the namespace");

    // The dead engine's lease on the query lapses (as engine.lease_ms after a crash would make
    // it), so the next open takes the query over.
    try (Connection c = DriverManager.getConnection(
            "jdbc:sqlite:" + answered.resolve("journal.sqlite").toAbsolutePath());
        Statement st = c.createStatement()) {
      st.executeUpdate("UPDATE queries SET lease_until_ms = 0");
    }
    open(answered);
    assertEquals(first + chain.size(), engine.nextSequence(PRINCIPAL), "the synced chain stays");
    long resumed = 0;
    for (SignedCommand c : chain) {
      resumed = engine.send(c).getCorrelation();
    }
    assertEquals(correlation, resumed, "the submit replays the correlation the answer named");
    assertEquals(QueryStatus.State.SUCCEEDED, await(resumed).getState());
    assertEquals(1, queriesAt(answered, first));
  }

  @Test
  void aRejectionIsDurableBeforeItIsAnswered() throws Exception {
    open(state);
    long first = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> chain = chain(first, bundle(COUNT), 200);
    assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(chain.get(0)).getKind());
    long before = durableCommits();
    // A part out of order: REJECTED, flushed (with the deferred begin under it) before the answer.
    SignedCommand wrongPart = sign(command(first + 1, first).setPart(
        io.transit.flight.proto.UploadPart.newBuilder().setIndex(5)
            .setData(com.google.protobuf.ByteString.copyFromUtf8("x"))));
    CommandOutcome rejected = engine.send(wrongPart);
    assertEquals(CommandOutcome.Kind.REJECTED, rejected.getKind());
    assertEquals(before + 1, durableCommits());
    // Its replay needs nothing more: the journal is durable.
    assertEquals(rejected, engine.send(wrongPart));
    assertEquals(before + 1, durableCommits());
  }

  /**
   * A power loss after the seal's deferred commit: the journal keeps the prefix ending at the
   * last durable commit (simulated by cutting the write-ahead log there, which is what SQLite's
   * recovery reads back when the unsynced tail never reached the disk). The earlier statement
   * and its inline result are intact, the interrupted one is gone, and its retry with the same
   * commands runs it once; what a kill -9 leaves (the whole log) replays instead.
   */
  @Test
  void aPowerLossKeepsTheDurablePrefixAndTheRetryRunsTheStatementOnce() throws Exception {
    open(state);
    long first = engine.nextSequence(PRINCIPAL);
    long done = admit(engine, first, bundle(COUNT));
    assertEquals(QueryStatus.State.SUCCEEDED, await(done).getState());
    byte[] manifest = engine.readManifest(access(), done);
    byte[] segment = engine.readSegment(access(), done, 0, 1L << 20);
    Path wal = state.resolve("journal.sqlite-wal");
    long durableEnd = Files.size(wal);

    long second = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> chain = chain(second, bundle(OTHER), 200);
    long commits = durableCommits();
    for (SignedCommand c : chain.subList(0, chain.size() - 1)) {
      assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(c).getKind());
    }
    assertEquals(commits, durableCommits(), "begin, parts and seal wrote no durable commit");
    assertTrue(Files.size(wal) > durableEnd, "their records are in the log, past its synced end");
    Path killed = Files.createDirectories(lost.resolve("killed"));
    Path powerLoss = Files.createDirectories(lost.resolve("power-loss"));
    copyJournal(state, killed, Files.size(wal));
    copyJournal(state, powerLoss, durableEnd);
    closeWithoutLeaks(engine);
    engine = null;

    open(powerLoss);
    assertEquals(second, engine.nextSequence(PRINCIPAL), "the unsynced chain records are gone");
    assertArrayEquals(manifest, engine.readManifest(access(), done));
    assertArrayEquals(segment, engine.readSegment(access(), done, 0, 1L << 20));
    long retried = sendAccepted(chain);
    assertEquals(QueryStatus.State.SUCCEEDED, await(retried).getState());
    assertEquals(1, queriesAt(powerLoss, second), "one query for the namespace");

    open(killed);
    assertEquals(second + chain.size() - 1, engine.nextSequence(PRINCIPAL));
    long resumed = 0;
    for (SignedCommand c : chain) {
      resumed = engine.send(c).getCorrelation();
    }
    assertEquals(QueryStatus.State.SUCCEEDED, await(resumed).getState());
    assertEquals(1, queriesAt(killed, second));
  }

  @Test
  void aJournalFromBeforeInlineResultsGainsTheirTableAtOpen() throws Exception {
    Path file = state.resolve("old.sqlite");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE principals (principal BIGINT PRIMARY KEY,"
          + " next_sequence BIGINT NOT NULL)");
      s.execute("INSERT INTO principals VALUES (7, 42)");
    }
    try (SqliteJournal j = SqliteJournal.open(file)) {
      assertEquals(42L, j.transaction(() -> j.nextSequence(7, 1)));
      j.transaction(() -> {
        j.storeInline(9, 0, new byte[] {1, 2, 3});
        return null;
      });
      assertArrayEquals(new byte[] {1, 2, 3},
          j.transaction(() -> j.inlineSegment(9, 0)).orElseThrow());
      assertTrue(j.transaction(() -> j.inlineSegment(9, 1)).isEmpty());
    }
  }

  /** Sends every command of {@code chain}, each ACCEPTED; the submit's correlation. */
  private long sendAccepted(List<SignedCommand> chain) {
    long correlation = 0;
    for (SignedCommand c : chain) {
      CommandOutcome o = engine.send(c);
      assertEquals(CommandOutcome.Kind.ACCEPTED, o.getKind(), o.getMessage());
      correlation = o.getCorrelation();
    }
    return correlation;
  }

  /** The database file and the first {@code walBytes} of its log: no index file, as after a crash. */
  private static void copyJournal(Path from, Path to, long walBytes) throws IOException {
    Files.copy(from.resolve("journal.sqlite"), to.resolve("journal.sqlite"));
    try (InputStream in = Files.newInputStream(from.resolve("journal.sqlite-wal"));
        OutputStream out = Files.newOutputStream(to.resolve("journal.sqlite-wal"))) {
      out.write(in.readNBytes((int) walBytes));
    }
  }

  private static long queriesAt(Path dir, long namespace) throws Exception {
    try (Connection c = DriverManager.getConnection(
            "jdbc:sqlite:" + dir.resolve("journal.sqlite").toAbsolutePath());
        java.sql.PreparedStatement p =
            c.prepareStatement("SELECT COUNT(*) FROM queries WHERE namespace = ?")) {
      p.setLong(1, namespace);
      try (java.sql.ResultSet r = p.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }
}
