package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.QueryPlan.Op;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.stream.Stream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The retention policy: release by age and by total bytes, removal of unreferenced segments. */
class RetentionTest {
  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;
  private EmbeddedEngine engine;

  // SMALL and LARGE are past ResultWriter.INLINE_RESULT_BYTES: their segments are files.
  private static final String SMALL = "small";
  private static final String LARGE = "large";
  private static final String INLINE = "inline";
  private static final long SMALL_ROWS = 12_000;
  private static final TablePlanner PLANNER = new TablePlanner()
      .put(SMALL, new QueryPlan(List.of(column("id", LogicalType.INT64, false)),
          new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, SMALL_ROWS)), null,
          false))
      .put(INLINE, new QueryPlan(List.of(column("id", LogicalType.INT64, false)),
          new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, 100L)), null,
          false))
      .put(LARGE, new QueryPlan(List.of(column("id", LogicalType.INT64, false),
          column("a", LogicalType.INT64, false)),
          new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, 5000L)), null,
          false));

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

  private void open(EngineOptions options) throws Exception {
    if (engine != null) {
      EmbeddedEngine previous = engine;
      engine = null; // closed once, even when its check fails
      closeWithoutLeaks(previous);
    }
    engine = EmbeddedEngine.open(state, options, demo, List.of(fullRights()), PLANNER);
  }

  private QueryStatus run(String sql) throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    long correlation = admit(engine, first,
        bundle(demo.get(0).declaration(), sql, budgets(1L << 40, 1L << 40, 1L << 30, 1000)));
    QueryStatus s = engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    return s;
  }

  private ResultManifest manifest(QueryStatus s) throws Exception {
    return ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
  }

  private static long bytes(ResultManifest m) {
    return m.getSegmentsList().stream().mapToLong(SegmentRef::getBytes).sum();
  }

  private Set<String> files() throws Exception {
    try (Stream<Path> f = Files.list(state.resolve("segments"))) {
      Set<String> out = new HashSet<>();
      f.forEach(p -> out.add(p.getFileName().toString()));
      return out;
    }
  }

  private static Set<String> named(ResultManifest m) {
    Set<String> out = new HashSet<>();
    for (SegmentRef r : m.getSegmentsList()) {
      out.add(Digests.hex(r.getSha256().toByteArray()));
    }
    return out;
  }

  private void assertRetired(QueryStatus s) {
    GatewayException manifest = assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), s.getCorrelation()));
    assertEquals(Cause.RETIRED, manifest.kind());
    assertEquals("query.retired", manifest.code());
    assertEquals(Cause.RETIRED, assertThrows(GatewayException.class,
        () -> engine.readSegment(access(), s.getCorrelation(), 0, 1L << 30)).kind());
  }

  /** An engine whose result age and history age are both 1 s (the sweeps' tests). */
  private void openWithOneSecondBounds() throws Exception {
    open(EngineOptions.defaults().withRetention(new RetentionPolicy(Duration.ofSeconds(1),
        1L << 40, Duration.ofHours(1), Duration.ofSeconds(1))));
  }

  @Test
  void theOldestResultsPastTheByteBoundAreReleasedAndOnlyUnreferencedFilesGo() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus a = run(SMALL);
    QueryStatus b = run(SMALL); // the same rows: its segments are a's files, shared
    QueryStatus c = run(LARGE);
    ResultManifest mb = manifest(b);
    ResultManifest mc = manifest(c);
    assertEquals(named(manifest(a)), named(mb));
    byte[] before = engine.readSegment(access(), b.getCorrelation(), 0, 1L << 30);
    // Reopened with room for exactly two of the three results: the oldest (a) goes.
    open(EngineOptions.defaults()
        .withRetention(Duration.ofDays(1), bytes(mb) + bytes(mc), Duration.ofHours(1)));
    Retention.Swept first = engine.sweepRetention();
    assertEquals(1, first.released());
    assertEquals(0, first.removed(), "a's files are b's too: nothing unreferenced");
    assertRetired(a);
    assertArrayEquals(before, engine.readSegment(access(), b.getCorrelation(), 0, 1L << 30));
    // Released b (as the operator does): its files go at the next sweep, c's stay.
    assertTrue(engine.release(b.getCorrelation()));
    Retention.Swept second = engine.sweepRetention();
    assertEquals(0, second.released());
    assertEquals(named(mb).size(), second.removed());
    Set<String> left = files();
    assertEquals(named(mc), left);
    assertRetired(b);
    for (int i = 0; i < mc.getSegmentsCount(); i++) {
      assertArrayEquals(mc.getSegments(i).getSha256().toByteArray(),
          Digests.sha256(engine.readSegment(access(), c.getCorrelation(), i, 1L << 30)));
    }
    // Nothing released since and every file named: the manifests are not read again.
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention());
  }

  @Test
  void aResultPastTheMaximumAgeIsReleasedByTheTimerAndFailsRetired() throws Exception {
    open(EngineOptions.defaults()
        .withRetention(Duration.ofMillis(300), 1L << 40, Duration.ofMillis(100)));
    QueryStatus s = run(LARGE);
    Set<String> named = named(manifest(s));
    assertFalse(named.isEmpty());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (files().stream().anyMatch(named::contains) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertTrue(files().stream().noneMatch(named::contains), "expired files were not removed");
    assertRetired(s);
    // The engine goes on serving: a new statement succeeds and reads back.
    QueryStatus next = run(SMALL);
    assertEquals(SMALL_ROWS, next.getTotalRows());
  }

  @Test
  void anInlineResultCountsTowardTheByteBoundAndItsReleaseDeletesItsBytes() throws Exception {
    open(EngineOptions.defaults());
    Set<String> filesBefore = files();
    QueryStatus a = run(INLINE);
    QueryStatus b = run(INLINE);
    ResultManifest mb = manifest(b);
    assertTrue(bytes(mb) > 0 && bytes(mb) <= ResultWriter.INLINE_RESULT_BYTES);
    assertEquals(filesBefore, files(), "an inline result writes no segment file");
    assertEquals(1, inlineRows(a.getCorrelation()));
    byte[] before = engine.readSegment(access(), b.getCorrelation(), 0, 1L << 30);
    // Room for one of the two: the oldest (a) is released and its journal bytes go with it.
    open(EngineOptions.defaults()
        .withRetention(Duration.ofDays(1), bytes(mb), Duration.ofHours(1)));
    assertEquals(new Retention.Swept(1, 0, true), engine.sweepRetention());
    assertRetired(a);
    assertEquals(0, inlineRows(a.getCorrelation()));
    assertEquals(1, inlineRows(b.getCorrelation()));
    assertArrayEquals(before, engine.readSegment(access(), b.getCorrelation(), 0, 1L << 30));
    assertTrue(engine.release(b.getCorrelation()));
    assertEquals(0, inlineRows(b.getCorrelation()));
    assertRetired(b);
  }

  @Test
  void aSweepReadsTheManifestsOnlyAfterAReleaseOrWhenAFileNoManifestNamedAppears()
      throws Exception {
    open(EngineOptions.defaults());
    QueryStatus large = run(LARGE);
    Set<String> named = named(manifest(large));
    assertEquals(new Retention.Swept(0, 0, true), engine.sweepRetention(), "the first one reads");
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention(), "nothing changed");
    run(INLINE); // a result without files changes nothing a read could find
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention());
    // A file no manifest names (as a crash between a segment write and its commit leaves one).
    String stray = Digests.hex(Digests.sha256("stray".getBytes(StandardCharsets.UTF_8)));
    Files.write(state.resolve("segments").resolve(stray), new byte[] {1, 2, 3});
    assertEquals(new Retention.Swept(0, 1, true), engine.sweepRetention());
    assertFalse(files().contains(stray));
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention());
    // A release outside the sweep (the operator's): the next sweep reads and removes its files.
    assertTrue(engine.release(large.getCorrelation()));
    assertEquals(new Retention.Swept(0, named.size(), true), engine.sweepRetention());
    assertTrue(files().stream().noneMatch(named::contains));
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention());
  }

  @Test
  void aQueryThatCommitsWhileTheSweepReadsTheManifestsKeepsItsFiles() throws Exception {
    // The sweep reads the manifests holding no lock; the journal below runs a whole query
    // (segment files written, manifest committed) right after that read, before the removal.
    JournalStore sqlite = SqliteJournal.open(state.resolve("journal.sqlite"));
    List<QueryStatus> during = new ArrayList<>();
    boolean[] armed = {false};
    JournalStore journal = (JournalStore) Proxy.newProxyInstance(
        JournalStore.class.getClassLoader(), new Class<?>[] {JournalStore.class},
        (proxy, method, args) -> {
          Object out;
          try {
            out = method.invoke(sqlite, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (method.getName().equals("liveManifestsAside") && armed[0]) {
            armed[0] = false;
            during.add(run(LARGE));
          }
          return out;
        });
    engine = EmbeddedEngine.open(state, EngineOptions.defaults(), journal, demo,
        List.of(fullRights()), PLANNER);
    String stray = Digests.hex(Digests.sha256("stray".getBytes(StandardCharsets.UTF_8)));
    Files.createDirectories(state.resolve("segments"));
    Files.write(state.resolve("segments").resolve(stray), new byte[] {1, 2, 3});
    armed[0] = true;
    assertEquals(new Retention.Swept(0, 1, true), engine.sweepRetention(), "only the stray goes");
    assertEquals(1, during.size(), "the query ran while the sweep was between read and removal");
    ResultManifest m = manifest(during.get(0));
    assertFalse(named(m).isEmpty());
    assertEquals(named(m), files());
    for (int i = 0; i < m.getSegmentsCount(); i++) {
      engine.readSegment(access(), during.get(0).getCorrelation(), i, 1L << 30);
    }
    // The next read sees the manifest itself.
    String late = Digests.hex(Digests.sha256("late".getBytes(StandardCharsets.UTF_8)));
    Files.write(state.resolve("segments").resolve(late), new byte[] {4});
    assertEquals(new Retention.Swept(0, 1, true), engine.sweepRetention());
    assertEquals(named(m), files());
  }

  @Test
  void oneSweepReleasesPastThePageOfOldestResultsItReadsAtATime() throws Exception {
    open(EngineOptions.defaults());
    List<QueryStatus> results = new ArrayList<>();
    for (int i = 0; i < Retention.RELEASE_PAGE + 3; i++) {
      results.add(run(INLINE));
    }
    long one = bytes(manifest(results.get(0)));
    // Room for one result: all but the youngest go, oldest first, over two pages.
    open(EngineOptions.defaults().withRetention(Duration.ofDays(1), one, Duration.ofHours(1)));
    assertEquals(new Retention.Swept(Retention.RELEASE_PAGE + 2, 0, true),
        engine.sweepRetention());
    // Exactly one result is left (the youngest by the journal's order: finish time, then
    // correlation), its bytes still in the journal; every other one's went with its release.
    List<QueryStatus> left = new ArrayList<>();
    for (QueryStatus r : results) {
      if (inlineRows(r.getCorrelation()) == 1) {
        left.add(r);
      } else {
        assertRetired(r);
      }
    }
    assertEquals(1, left.size());
    QueryStatus kept = engine.awaitQuery(access(), left.get(0).getCorrelation(), System.nanoTime());
    assertEquals(results.get(0).getTotalRows(), kept.getTotalRows());
    assertEquals(new Retention.Swept(0, 0, false), engine.sweepRetention());
  }

  @Test
  void aStatementPastTheHistoryAgeIsForgottenAndItsRetryIsRefusedNeverRunAgain() throws Exception {
    // Both bounds 1 s: the old statement is past them at the sweep, the young one (finished
    // just before it) is not, with room for a slow host.
    openWithOneSecondBounds();
    RequestBundle oldBundle = bundle(demo.get(0).declaration(), INLINE, roomyBudgets());
    List<SignedCommand> old = chain(engine.nextSequence(PRINCIPAL), oldBundle, 200);
    QueryStatus first = runChain(old);
    Thread.sleep(1_500);
    List<SignedCommand> young = chain(engine.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), SMALL, roomyBudgets()), 200);
    QueryStatus second = runChain(young);
    long next = engine.nextSequence(PRINCIPAL);
    assertEquals(old.size() + young.size(), journalRows("commands"));

    Retention.Swept swept = engine.sweepRetention();
    assertEquals(1, swept.released(), "the old result first");
    assertEquals(1, swept.forgotten(), "then its history; the young statement keeps both");
    assertEquals(young.size(), journalRows("commands"));
    assertEquals(1, journalRows("queries"));
    assertEquals(1, journalRows("uploads"));
    assertEquals(young.size() - 3, journalRows("upload_parts"));
    assertEquals(0, inlineRows(first.getCorrelation()));

    // Every command of the forgotten chain is refused, none decided again.
    for (SignedCommand c : old) {
      GatewayException e = assertThrows(GatewayException.class, () -> engine.send(c));
      assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode());
      assertEquals(Cause.PRECONDITION, e.kind());
      assertEquals(Outcome.UNKNOWN, e.outcome());
      assertEquals(List.of(Action.USE_NEXT_SEQUENCE), e.actions());
    }
    assertEquals(QueryCode.UNKNOWN_RESULT, assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), first.getCorrelation())).queryCode());
    assertEquals(next, engine.nextSequence(PRINCIPAL), "the next sequence never moves back");
    assertEquals(1, journalRows("queries"), "nothing was admitted again");
    // The young chain still replays, and the next statement runs.
    CommandOutcome replay = engine.send(young.get(young.size() - 1));
    assertEquals(second.getCorrelation(), replay.getCorrelation());
    assertEquals(second.getManifestSha256(),
        com.google.protobuf.ByteString.copyFrom(Digests.sha256(
            engine.readManifest(access(), second.getCorrelation()))));
    assertEquals(SMALL_ROWS, run(SMALL).getTotalRows());
    Retention.Swept again = engine.sweepRetention();
    assertEquals(0, again.released());
    assertEquals(0, again.forgotten(), "nothing more is past either bound");
  }

  /**
   * A finished statement recorded before commands named their namespace, its run not provably
   * its own (its submit one past the run's end, as when another client's command came in
   * between): of its records only the begin is provably the chain's, and it goes with the query,
   * so a retry from the begin is refused {@code query.history_pruned} instead of replaying the
   * chain toward a query that is no longer there.
   */
  @Test
  void aFinishedStatementsBeginGoesEvenWhenItsOlderRunIsNotProvablyItsOwn() throws Exception {
    openWithOneSecondBounds();
    List<SignedCommand> old = chain(engine.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), INLINE, roomyBudgets()), 200);
    runChain(old);
    long begin = NativeCommand.parseFrom(old.get(0).getCommand()).getSequence();
    long submit = NativeCommand.parseFrom(old.get(old.size() - 1).getCommand()).getSequence();
    try (Connection c = DriverManager.getConnection(
            "jdbc:sqlite:" + state.resolve("journal.sqlite").toAbsolutePath());
        Statement st = c.createStatement()) {
      st.execute("UPDATE commands SET namespace = NULL WHERE principal = " + PRINCIPAL);
      st.execute("UPDATE commands SET sequence = sequence + 1 WHERE principal = " + PRINCIPAL
          + " AND sequence = " + submit);
      st.execute("UPDATE principals SET next_sequence = next_sequence + 1 WHERE principal = "
          + PRINCIPAL);
    }
    Thread.sleep(1_500);
    assertEquals(1, engine.sweepRetention().forgotten());
    assertEquals(old.size() - 1, journalRows("commands"),
        "the begin goes; the rest, not provably the chain's, stays");
    assertEquals(0, journalRows("queries"));
    GatewayException e = assertThrows(GatewayException.class, () -> engine.send(old.get(0)));
    assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode());
  }

  @Test
  void uploadsNeverSubmittedArePastTheHistoryAgeForgottenAndTheirRetryIsRefused()
      throws Exception {
    openWithOneSecondBounds();
    // One chain stops after its first part (open), one before its submit (sealed), one at a
    // submit that is refused (its bundle's digest differs from the sealed one).
    List<SignedCommand> open = chain(engine.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), INLINE, roomyBudgets()), 200);
    sendAll(open.subList(0, 2), CommandOutcome.Kind.ACCEPTED);
    List<SignedCommand> sealed = chain(engine.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), SMALL, roomyBudgets()), 200);
    sendAll(sealed.subList(0, sealed.size() - 1), CommandOutcome.Kind.ACCEPTED);
    long refusedAt = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> refused = chain(refusedAt,
        bundle(demo.get(0).declaration(), SMALL, roomyBudgets()), 200);
    sendAll(refused.subList(0, refused.size() - 1), CommandOutcome.Kind.ACCEPTED);
    sendAll(List.of(sign(command(refusedAt + refused.size() - 1, refusedAt).setSubmit(
            io.transit.flight.proto.SubmitQuery.newBuilder().setBundleSha256(
                com.google.protobuf.ByteString.copyFrom(Digests.sha256(new byte[] {1})))))),
        CommandOutcome.Kind.REJECTED);
    Thread.sleep(1_500);
    List<SignedCommand> young = chain(engine.nextSequence(PRINCIPAL),
        bundle(demo.get(0).declaration(), SMALL, roomyBudgets()), 200);
    runChain(young);
    long next = engine.nextSequence(PRINCIPAL);
    assertEquals(4, journalRows("uploads"));

    Retention.Swept swept = engine.sweepRetention();
    assertEquals(3, swept.forgotten(), "the three unsubmitted uploads, not the young statement");
    assertEquals(1, journalRows("uploads"));
    assertEquals(young.size() - 3, journalRows("upload_parts"));
    assertEquals(young.size(), journalRows("commands"), "every record of the three chains");
    for (List<SignedCommand> gone : List.of(open.subList(0, 2), sealed.subList(0,
        sealed.size() - 1), refused.subList(0, refused.size() - 1))) {
      for (SignedCommand c : gone) {
        GatewayException e = assertThrows(GatewayException.class, () -> engine.send(c));
        assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode());
      }
    }
    assertEquals(next, engine.nextSequence(PRINCIPAL), "the next sequence never moves back");
    assertEquals(SMALL_ROWS, run(SMALL).getTotalRows());
    assertEquals(0, engine.sweepRetention().forgotten(), "nothing more is past the bound");
  }

  /**
   * The window between a resumed chain's replayed begin and its first command never sent: a
   * sweep that forgets the abandoned upload there leaves that command pruned, unrecorded, not a
   * recorded rejection telling the caller to change a request that was fine (until 2026-12-07).
   */
  @Test
  void aResumedChainWhoseUploadIsForgottenAfterItsBeginReplayedIsPrunedNotRejected()
      throws Exception {
    openWithOneSecondBounds();
    long begin = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> chain = chain(begin,
        bundle(demo.get(0).declaration(), SMALL, roomyBudgets()), 200);
    assertTrue(chain.size() > 3, "a begin, parts and a seal before the submit");
    sendAll(chain.subList(0, 2), CommandOutcome.Kind.ACCEPTED);
    Thread.sleep(1_500);
    assertEquals(CommandOutcome.Kind.ACCEPTED, engine.send(chain.get(0)).getKind(), "replayed");
    assertEquals(1, engine.sweepRetention().forgotten(), "the abandoned upload, records and all");
    long next = engine.nextSequence(PRINCIPAL);
    assertEquals(begin + 2, next);

    GatewayException e = assertThrows(GatewayException.class, () -> engine.send(chain.get(2)));
    assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode());
    assertEquals(Outcome.UNKNOWN, e.outcome());
    assertEquals(List.of(Action.USE_NEXT_SEQUENCE), e.actions());
    assertEquals(next, engine.nextSequence(PRINCIPAL), "nothing recorded, no sequence spent");
    assertEquals(SMALL_ROWS, run(SMALL).getTotalRows());
  }

  @Test
  void refusalsNamingNoUploadArePastTheHistoryAgeForgottenAndTheirRetryIsRefused()
      throws Exception {
    openWithOneSecondBounds();
    // A part naming a namespace no upload holds, and a begin whose namespace is not its own
    // sequence: refused, with no upload to be forgotten with.
    long at = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> old = List.of(
        sign(command(at, at + 1_000).setPart(io.transit.flight.proto.UploadPart.newBuilder()
            .setIndex(0).setData(com.google.protobuf.ByteString.copyFromUtf8("x")))),
        sign(command(at + 1, at).setBegin(io.transit.flight.proto.BeginUpload.newBuilder()
            .setBundleBytes(1).setPartCount(1).setBundleSha256(
                com.google.protobuf.ByteString.copyFrom(new byte[32])))));
    sendAll(old, CommandOutcome.Kind.REJECTED);
    Thread.sleep(1_500);
    SignedCommand young = sign(command(at + 2, at + 2_000).setPart(
        io.transit.flight.proto.UploadPart.newBuilder().setIndex(0)
            .setData(com.google.protobuf.ByteString.copyFromUtf8("y"))));
    sendAll(List.of(young), CommandOutcome.Kind.REJECTED);
    long next = engine.nextSequence(PRINCIPAL);
    assertEquals(3, journalRows("commands"));

    Retention.Swept swept = engine.sweepRetention();
    assertEquals(2, swept.forgotten(), "the two old refusals, not the young one");
    assertEquals(1, journalRows("commands"));
    for (SignedCommand c : old) {
      GatewayException e = assertThrows(GatewayException.class, () -> engine.send(c));
      assertEquals(QueryCode.HISTORY_PRUNED, e.queryCode());
      assertEquals(Outcome.UNKNOWN, e.outcome());
    }
    CommandOutcome replay = engine.send(young);
    assertEquals(CommandOutcome.Kind.REJECTED, replay.getKind(), "the young refusal replays");
    assertEquals(next, engine.nextSequence(PRINCIPAL), "the next sequence never moves back");
    assertEquals(SMALL_ROWS, run(SMALL).getTotalRows());
    assertEquals(0, engine.sweepRetention().forgotten(), "nothing more is past the bound");
  }

  @Test
  void aSweepThatStopsAtItsBudgetIsBehindAndTheTimerCatchesUpSooner() throws Exception {
    int budget = Retention.FORGET_PAGES_PER_SWEEP * Retention.FORGET_PAGE;
    // Two budgets and a little more of failed statements finished long ago: forgetting them all
    // takes three sweeps.
    int backlog = 2 * budget + 100;
    RetentionPolicy bounded = new RetentionPolicy(Duration.ofSeconds(1), 1L << 40,
        Duration.ofMillis(200), Duration.ofSeconds(1));
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("backlog.sqlite"))) {
      journal.transaction(JournalStore.Durability.DEFERRED, () -> {
        byte[] digest = new byte[32];
        for (int i = 0; i < backlog; i++) {
          long c = journal.allocateCorrelation();
          journal.insertAccepted(c, 1, i + 1, digest);
          assertTrue(journal.finish(QueryStatus.newBuilder().setCorrelation(c)
              .setPrincipal(1).setNamespace(i + 1).setState(QueryStatus.State.FAILED).setCode("query.test").build(), digest, null,
              0, 1_000, 0));
        }
        return null;
      });
      Retention manual = new Retention(journal, new LocalSegmentStore(state.resolve("segments")),
          bounded, () -> 1_000_000L, Duration.ofSeconds(2));
      Retention.Swept first = manual.sweep();
      assertEquals(budget, first.forgotten());
      assertTrue(first.behind(), "stopped at its budget with more past the bound");
      assertEquals(Retention.CATCH_UP_MILLIS, Retention.nextDelayMillis(first, 300_000));
      assertEquals(200, Retention.nextDelayMillis(first, 200), "never later than the interval");
      manual.close();

      // The timer's sweeps go on past one that was behind, until nothing is.
      Retention timed = new Retention(journal, new LocalSegmentStore(state.resolve("segments")),
          bounded, () -> 1_000_000L, Duration.ofSeconds(2));
      timed.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!journal.transaction(() -> journal.finishedBefore(Long.MAX_VALUE, 1)).isEmpty()) {
        assertTrue(System.nanoTime() < deadline, "the timer's sweeps stopped");
        Thread.sleep(50);
      }
      Retention.Swept last = timed.sweep();
      timed.close();
      assertEquals(0, last.forgotten());
      assertFalse(last.behind());
      assertEquals(300_000, Retention.nextDelayMillis(last, 300_000));
    }
  }

  /**
   * A backlog of results past the age bound (a restart after a long stop) is released a page per
   * transaction, one budget a sweep: the sweep that stops at it is behind, the next releases the
   * rest and is not.
   */
  @Test
  void aReleaseBacklogGoesOneBudgetASweepAndTheSweepThatStopsIsBehind() throws Exception {
    int budget = Retention.RELEASE_PAGES_PER_SWEEP * Retention.RELEASE_PAGE;
    int backlog = budget + 100;
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("backlog.sqlite"))) {
      journal.transaction(JournalStore.Durability.DEFERRED, () -> {
        byte[] digest = new byte[32];
        byte[] manifest = ResultManifest.getDefaultInstance().toByteArray();
        for (int i = 0; i < backlog; i++) {
          long c = journal.allocateCorrelation();
          journal.insertAccepted(c, 1, i + 1, digest);
          assertTrue(journal.finish(QueryStatus.newBuilder().setCorrelation(c)
              .setPrincipal(1).setNamespace(i + 1).setState(QueryStatus.State.SUCCEEDED).build(),
              digest, manifest, 10, 1_000, 0));
        }
        return null;
      });
      try (Retention r = new Retention(journal, new LocalSegmentStore(state.resolve("segments")),
          new RetentionPolicy(Duration.ofSeconds(1), 1L << 40, Duration.ofHours(1)),
          () -> 1_000_000L, Duration.ofSeconds(2))) {
        Retention.Swept first = r.sweep();
        assertEquals(budget, first.released());
        assertTrue(first.behind(), "stopped at its budget with more past the bound");
        assertEquals(Retention.CATCH_UP_MILLIS, Retention.nextDelayMillis(first, 300_000));
        Retention.Swept second = r.sweep();
        assertEquals(100, second.released());
        assertFalse(second.behind());
        assertEquals(0, r.sweep().released());
      }
      assertTrue(journal.transaction(() -> journal.oldestRetained(1)).isEmpty());
    }
  }

  /**
   * A result small enough for the journal writes no file, so it never waits on the sweep's hold;
   * a result written to files does, until the hold ends.
   */
  @Test
  void aResultKeptInTheJournalNeverWaitsOnTheSweepsHold() throws Exception {
    open(EngineOptions.defaults());
    Lock hold = engine.sweepHold();
    assertTrue(hold.tryLock(10, TimeUnit.SECONDS), "the sweep's hold was never free");
    long large;
    try {
      run(INLINE);
      long first = engine.nextSequence(PRINCIPAL);
      large = admit(engine, first, bundle(demo.get(0).declaration(), LARGE,
          budgets(1L << 40, 1L << 40, 1L << 30, 1000)));
      QueryStatus waiting = engine.awaitQuery(access(), large,
          System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300));
      assertEquals(QueryStatus.State.ACCEPTED, waiting.getState(),
          "its first segment write waits for the hold");
    } finally {
      hold.unlock();
    }
    QueryStatus s = engine.awaitQuery(access(), large,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    assertTrue(files().containsAll(named(manifest(s))));
  }

  /** A store whose listing and removals the test watches, over a local directory. */
  private static SegmentStore watched(SegmentStore local, Runnable onList, Runnable onRemove) {
    return new SegmentStore() {
      @Override
      public byte[] write(byte[] bytes) throws IOException {
        return local.write(bytes);
      }

      @Override
      public Optional<byte[]> read(byte[] sha256, long expectedBytes) throws IOException {
        return local.read(sha256, expectedBytes);
      }

      @Override
      public Optional<org.apache.arrow.memory.ArrowBuf> read(byte[] sha256,
          long expectedBytes, BufferAllocator allocator)
          throws IOException {
        return local.read(sha256, expectedBytes, allocator);
      }

      @Override
      public void sync() throws IOException {
        local.sync();
      }

      @Override
      public List<byte[]> stored() throws IOException {
        onList.run();
        return local.stored();
      }

      @Override
      public boolean remove(byte[] sha256) throws IOException {
        onRemove.run();
        return local.remove(sha256);
      }
    };
  }

  private void strays(int n) throws Exception {
    Files.createDirectories(state.resolve("segments"));
    for (int i = 0; i < n; i++) {
      byte[] b = ("stray " + i).getBytes(StandardCharsets.UTF_8);
      Files.write(state.resolve("segments").resolve(Digests.hex(Digests.sha256(b))), b);
    }
  }

  /** Listing the store is a network call with S3: no segment writer waits on it. */
  @Test
  void theSweepListsTheStoreWithoutHoldingUpWriters() throws Exception {
    strays(1);
    AtomicReference<Retention> retention =
        new AtomicReference<>();
    List<Boolean> writableWhileListing = new ArrayList<>();
    ExecutorService other =
        Executors.newSingleThreadExecutor();
    Runnable onList = () -> {
      try {
        writableWhileListing.add(other.submit(() -> {
          Lock writing = retention.get().writing();
          if (writing.tryLock()) {
            writing.unlock();
            return true;
          }
          return false;
        }).get(10, TimeUnit.SECONDS));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    };
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("list.sqlite"));
        Retention r = new Retention(journal,
            watched(new LocalSegmentStore(state.resolve("segments")), onList, () -> { }),
            new RetentionPolicy(Duration.ofDays(1), 1L << 40, Duration.ofHours(1)),
            () -> 1_000_000L, Duration.ofSeconds(2))) {
      retention.set(r);
      assertEquals(new Retention.Swept(0, 1, true), r.sweep());
      assertFalse(writableWhileListing.isEmpty());
      assertFalse(writableWhileListing.contains(false), writableWhileListing.toString());
    } finally {
      other.shutdownNow();
      assertTrue(other.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /**
   * A sweep looking for the write side does not queue on the fair lock: a run that starts
   * writing segments meanwhile is not held up behind it by a run already writing.
   */
  @Test
  void aSweepWaitingForTheWriteSideHoldsUpNoNewWriter() throws Exception {
    strays(1);
    ExecutorService threads =
        Executors.newFixedThreadPool(2);
    CountDownLatch holding = new java.util.concurrent.CountDownLatch(1);
    CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("queue.sqlite"));
        Retention r = new Retention(journal, new LocalSegmentStore(state.resolve("segments")),
            new RetentionPolicy(Duration.ofDays(1), 1L << 40, Duration.ofHours(1)),
            () -> 1_000_000L, Duration.ofSeconds(10))) {
      var writer = threads.submit(() -> {
        Lock writing = r.writing();
        // A long run writing its segments.
        assertTrue(writing.tryLock(10, TimeUnit.SECONDS), "the write side was never free");
        try {
          holding.countDown();
          return letGo.await(30, TimeUnit.SECONDS);
        } finally {
          writing.unlock();
        }
      });
      assertTrue(holding.await(10, TimeUnit.SECONDS));
      var sweep = threads.submit(r::sweep);
      Thread.sleep(200); // the sweep is looking for the write side now
      Lock writing = r.writing();
      assertTrue(writing.tryLock(2, TimeUnit.SECONDS), "a new writer went ahead of the sweep");
      writing.unlock();
      letGo.countDown();
      assertTrue(writer.get(10, TimeUnit.SECONDS));
      assertEquals(new Retention.Swept(0, 1, true), sweep.get(20, TimeUnit.SECONDS));
    } finally {
      letGo.countDown();
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /**
   * Runs whose holds overlap without a gap never leave the write side free: the sweeps that miss
   * it are behind, and after {@link Retention#QUEUE_AFTER_MISSES} of them the next queues for it,
   * so the runs holding it finish, and removes.
   */
  @Test
  void runsThatNeverLeaveTheWriteSideFreeStillLetAQueuedSweepRemove() throws Exception {
    strays(1);
    ExecutorService runs = Executors.newFixedThreadPool(2);
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicInteger holders = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger turn = new java.util.concurrent.atomic.AtomicInteger();
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("relay.sqlite"));
        Retention r = new Retention(journal, new LocalSegmentStore(state.resolve("segments")),
            new RetentionPolicy(Duration.ofDays(1), 1L << 40, Duration.ofHours(1)),
            () -> 1_000_000L, Duration.ofMillis(300))) {
      CountDownLatch both = new CountDownLatch(2);
      List<java.util.concurrent.Future<Integer>> relay = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        int me = i;
        relay.add(runs.submit(() -> {
          // Each run lets go only when it is its turn and the other holds the read side too, so
          // the lock is never free — unless a queued sweep keeps the other from taking it again,
          // when the run lets go after 200 ms regardless.
          int rounds = 0;
          Lock writing = r.writing();
          while (!stop.get()) {
            // Timed, yet fair like lock(): it still queues behind a waiting sweep.
            assertTrue(writing.tryLock(30, TimeUnit.SECONDS), "run " + me + " never got the lock");
            holders.incrementAndGet();
            both.countDown();
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
            while ((holders.get() < 2 || turn.get() != me) && System.nanoTime() < until) {
              Thread.onSpinWait();
            }
            holders.decrementAndGet();
            turn.set(1 - me);
            writing.unlock();
            rounds++;
          }
          return rounds;
        }));
      }
      assertTrue(both.await(10, TimeUnit.SECONDS));
      for (int i = 0; i < Retention.QUEUE_AFTER_MISSES; i++) {
        Retention.Swept missed = r.sweep();
        assertEquals(0, missed.removed(), "sweep " + i + " found the write side free");
        assertTrue(missed.behind(), "a sweep that missed the lock is behind");
      }
      assertEquals(1, r.sweep().removed(), "the queued sweep removes");
      stop.set(true);
      for (var run : relay) {
        assertTrue(run.get(10, TimeUnit.SECONDS) > 0);
      }
    } finally {
      stop.set(true);
      runs.shutdownNow();
      assertTrue(runs.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /** Removals that take long stop at the hold's bound; the sweep is behind and the next goes on. */
  @Test
  void removalStopsAtTheHoldsBoundAndTheNextSweepGoesOn() throws Exception {
    int strays = 12;
    strays(strays);
    long pauseMillis = TimeUnit.NANOSECONDS.toMillis(Retention.REMOVAL_HOLD_NANOS) / 4;
    Runnable slowRemove = () -> {
      try {
        Thread.sleep(pauseMillis);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    };
    try (SqliteJournal journal = SqliteJournal.open(state.resolve("cut.sqlite"));
        Retention r = new Retention(journal,
            watched(new LocalSegmentStore(state.resolve("segments")), () -> { }, slowRemove),
            new RetentionPolicy(Duration.ofDays(1), 1L << 40, Duration.ofHours(1)),
            () -> 1_000_000L, Duration.ofSeconds(2))) {
      Retention.Swept first = r.sweep();
      assertTrue(first.removed() >= 1 && first.removed() < strays, first.toString());
      assertTrue(first.behind(), "files left: the next sweep comes sooner");
      assertEquals(Retention.CATCH_UP_MILLIS, Retention.nextDelayMillis(first, 300_000));
      int removed = first.removed();
      for (int i = 0; i < strays && removed < strays; i++) {
        removed += r.sweep().removed();
      }
      assertEquals(strays, removed);
      assertEquals(Set.of(), files());
      assertFalse(r.sweep().behind());
    }
  }

  /** Sends each command in turn, each decided {@code expected}; returns the last outcome. */
  private CommandOutcome sendAll(List<SignedCommand> commands, CommandOutcome.Kind expected)
      throws Exception {
    CommandOutcome o = null;
    for (SignedCommand c : commands) {
      o = engine.send(c);
      assertEquals(expected, o.getKind(), o.getMessage());
    }
    return o;
  }

  private QueryStatus runChain(List<SignedCommand> chain) throws Exception {
    CommandOutcome last = sendAll(chain, CommandOutcome.Kind.ACCEPTED);
    QueryStatus s = engine.awaitQuery(access(), last.getCorrelation(),
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    return s;
  }

  /** Rows of one journal table, read through a second connection. */
  private long journalRows(String table) throws Exception {
    try (Connection c = DriverManager.getConnection(
            "jdbc:sqlite:" + state.resolve("journal.sqlite").toAbsolutePath());
        Statement st = c.createStatement();
        java.sql.ResultSet r = st.executeQuery("SELECT COUNT(*) FROM " + table)) {
      r.next();
      return r.getLong(1);
    }
  }

  /** Rows of the journal's inline table for one result, read through a second connection. */
  private long inlineRows(long correlation) throws Exception {
    try (Connection c = DriverManager.getConnection(
            "jdbc:sqlite:" + state.resolve("journal.sqlite").toAbsolutePath());
        java.sql.PreparedStatement p = c.prepareStatement(
            "SELECT COUNT(*) FROM inline_segments WHERE correlation = ?")) {
      p.setLong(1, correlation);
      try (java.sql.ResultSet r = p.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  @Test
  void duckDbsOutOfMemoryErrorIsRecognised() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      s.execute("SET memory_limit = '8MB'");
      s.execute("SET threads = 1");
      // A list aggregate holds every value in memory and cannot spill.
      SQLException e = assertThrows(SQLException.class, () -> s.executeQuery(
          "SELECT list(i || 'padding-padding-padding') FROM range(10000000) t(i)").next());
      assertTrue(QueryRunner.outOfMemory(e), e.getMessage());
    }
    assertFalse(QueryRunner.outOfMemory(new SQLException("Binder Error: no column x")));
  }
}
