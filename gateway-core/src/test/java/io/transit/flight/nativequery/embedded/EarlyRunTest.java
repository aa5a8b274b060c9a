package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.SubmitQuery;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Output;
import io.transit.flight.query.QueryPlan.OutputKind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Early runs (docs/native-engine.md, "Early runs"): the announced chain (or, without one, its
 * seal) starts its bundle's execution, the accepted submit's query takes that result (recorded in
 * the submit's own commit when it is ready and inline), and a submit that does not come as a new
 * query leaves nothing of it — with the engine's execution threads and allocator back to idle.
 */
class EarlyRunTest {
  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;
  private EmbeddedEngine engine;

  private static final String COUNT = "count";
  /** 200,000 rows of two int64 columns: several MiB, far past the inline limit. */
  private static final String LARGE = "large";
  private static final TablePlanner PLANNER = new TablePlanner()
      .put(COUNT, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_STAR, null, null),
          new Output("s", true, OutputKind.SUM, "a", LogicalType.INT64)), null, null, true))
      .put(LARGE, new QueryPlan(List.of(column("id", LogicalType.INT64, false),
          column("a", LogicalType.INT64, false)),
          new QueryPlan.Comparison("id", QueryPlan.Op.LT,
              new QueryPlan.Literal(LogicalType.INT64, 200_000L)), null, false));

  @BeforeAll
  static void demo() throws Exception {
    demo = DemoData.generate(data);
  }

  @BeforeEach
  void open() throws Exception {
    // Two execution threads (the default): one may run early. A lease far longer than any run.
    engine = EmbeddedEngine.open(state,
        EngineOptions.defaults().withLease(Duration.ofMinutes(10), Duration.ofSeconds(5)),
        demo, List.of(fullRights()), PLANNER);
  }

  @AfterEach
  void close() throws InterruptedException {
    if (engine != null) {
      closeWithoutLeaks(engine);
    }
  }

  private RequestBundle bundle(String sql) {
    return EngineTestSupport.bundle(demo.get(0).declaration(), sql, roomyBudgets());
  }

  private QueryStatus await(long correlation) throws InterruptedException {
    return engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
  }

  /** Sends commands in order; each must be accepted; returns the last outcome. */
  private CommandOutcome sendAll(List<SignedCommand> commands) {
    CommandOutcome last = null;
    for (SignedCommand c : commands) {
      last = engine.send(c);
      assertEquals(CommandOutcome.Kind.ACCEPTED, last.getKind(), last.getMessage());
    }
    return last;
  }

  /**
   * A chain for {@code query} at the next sequence, sent up to its seal; returns once the early
   * run the seal started has waited out {@link EmbeddedEngine#EARLY_WAIT_MS} for the submit.
   */
  private List<SignedCommand> sealedAndGivenUp(String query) throws InterruptedException {
    List<SignedCommand> chain = chain(engine.nextSequence(PRINCIPAL), bundle(query), 200);
    sendAll(chain.subList(0, chain.size() - 1));
    Thread.sleep(EmbeddedEngine.EARLY_WAIT_MS + 200);
    within(5_000, () -> engine.earlyRunsRunning() == 0, "the early run gave up its wait");
    return chain;
  }

  /** Every segment read back and checked against its reference; returns the total rows. */
  private long readBack(QueryStatus s) throws Exception {
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    byte[] manifestBytes = engine.readManifest(access(), s.getCorrelation());
    assertArrayEquals(s.getManifestSha256().toByteArray(), Digests.sha256(manifestBytes));
    ResultManifest m = ResultManifest.parseFrom(manifestBytes);
    assertEquals(s.getCorrelation(), m.getCorrelation());
    long rows = 0;
    for (int i = 0; i < m.getSegmentsCount(); i++) {
      SegmentRef ref = m.getSegments(i);
      byte[] seg = engine.readSegment(access(), s.getCorrelation(), i, 1L << 30);
      assertArrayEquals(ref.getSha256().toByteArray(), Digests.sha256(seg));
      rows += decode(seg, List.of("id", "a")).size();
    }
    return rows;
  }

  @Test
  void aSealedBundleRunsBeforeItsSubmitAndTheAcceptedQueryTakesItsResult() throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    QueryStatus small = await(admit(engine, first, bundle(COUNT)));
    assertEquals(QueryStatus.State.SUCCEEDED, small.getState(), small.getMessage());
    assertAdopted(1, "the submit's query took the early result");
    ResultManifest m =
        ResultManifest.parseFrom(engine.readManifest(access(), small.getCorrelation()));
    assertEquals(small.getCorrelation(), m.getCorrelation(),
        "named by the query, not by the early run");
    assertEquals(small.getNamespace(), m.getNamespace());

    // The small run's execution thread gives its permit back once it wakes from the hand-off
    // wait the submit ended; on a loaded machine that can come after the next announcement,
    // which would then find no permit (and run late, not early).
    within(5_000, () -> engine.earlyRunsRunning() == 0, "the small result's early run ended");

    // A result past the inline limit: its segments go to the store while no query names them
    // yet, and the manifest that names them commits with the handed-off query.
    QueryStatus large = await(admit(engine, engine.nextSequence(PRINCIPAL), bundle(LARGE)));
    assertEquals(200_000, readBack(large));
    assertAdopted(2, "the large result's early run too");
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "no early run left open, no execution buffer held");
  }

  @Test
  void aResultComputedBeforeItsSubmitCommitsWithTheAcceptanceInOneDurableCommit()
      throws Exception {
    SqliteJournal journal = (SqliteJournal) engine.journal();
    List<SignedCommand> chain = chain(engine.nextSequence(PRINCIPAL), bundle(COUNT), 200);
    engine.expect(chain);
    sendAll(chain.subList(0, chain.size() - 1));
    SignedCommand submit = chain.get(chain.size() - 1);
    NativeCommand parsed = NativeCommand.parseFrom(submit.getCommand());
    within(5_000, () -> engine.earlyResultReady(parsed.getPrincipal(), parsed.getNamespace(),
        parsed.getSubmit().getBundleSha256().toByteArray()), "the early run computed the result");
    long durable = journal.durableCommits();

    CommandOutcome accepted = engine.send(submit);
    assertEquals(CommandOutcome.Kind.ACCEPTED, accepted.getKind(), accepted.getMessage());
    assertEquals(durable + 1, journal.durableCommits(),
        "the acceptance and the result: one durable commit");
    // No run follows: the status is terminal when the submit returns, and a wait that ends at
    // once answers it without syncing anything more.
    QueryStatus done = engine.awaitQuery(access(), accepted.getCorrelation(), System.nanoTime());
    assertEquals(QueryStatus.State.SUCCEEDED, done.getState(), done.getMessage());
    assertEquals(durable + 1, journal.durableCommits());
    assertEquals(1, done.getTotalRows());
    ResultManifest m =
        ResultManifest.parseFrom(engine.readManifest(access(), done.getCorrelation()));
    assertEquals(done.getCorrelation(), m.getCorrelation());
    assertArrayEquals(m.getSegments(0).getSha256().toByteArray(),
        Digests.sha256(engine.readSegment(access(), done.getCorrelation(), 0, 1L << 20)));
    assertEquals(0, segmentFiles(), "held inline, with the status");
    assertAdopted(1, "the early result was the query's");
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "the early run ended without a run of the query, no buffer held");

    // The same submit again is a replay of that outcome; nothing runs or commits.
    assertEquals(accepted, engine.send(submit));
    assertEquals(durable + 1, journal.durableCommits());

    // A result past the inline limit is not recorded with its submit: its run commits it.
    List<SignedCommand> large = chain(engine.nextSequence(PRINCIPAL), bundle(LARGE), 200);
    engine.expect(large);
    assertEquals(200_000, readBack(await(sendAll(large).getCorrelation())));
    assertAdopted(2, "the large result's early run, handed its query");
  }

  @Test
  void aRejectedSubmitAbandonsTheEarlyRunAndTheNextStatementRunsEarlyAgain() throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> chain = chain(first, bundle(LARGE), 200);
    sendAll(chain.subList(0, chain.size() - 1));
    // A submit naming another digest than the sealed one is recorded REJECTED: no query exists.
    NativeCommand submit = NativeCommand.parseFrom(chain.get(chain.size() - 1).getCommand());
    CommandOutcome rejected = engine.send(sign(submit.toBuilder().setSubmit(
        SubmitQuery.newBuilder().setBundleSha256(ByteString.copyFrom(new byte[32])))));
    assertEquals(CommandOutcome.Kind.REJECTED, rejected.getKind());
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "the abandoned early run stopped and freed its buffers");

    // Its permit came back: the next statement's result is computed early again.
    QueryStatus next = await(admit(engine, engine.nextSequence(PRINCIPAL), bundle(COUNT)));
    assertEquals(QueryStatus.State.SUCCEEDED, next.getState(), next.getMessage());
    assertAdopted(1, "the next statement was computed early again");
  }

  @Test
  void aSubmitThatComesAfterTheEarlyWaitRunsItsQueryTheUsualWay() throws Exception {
    // The early run executed and waits for the submit; past its wait it gives the permit back.
    List<SignedCommand> chain = sealedAndGivenUp(COUNT);
    CommandOutcome accepted = sendAll(List.of(chain.get(chain.size() - 1)));
    QueryStatus late = await(accepted.getCorrelation());
    assertEquals(QueryStatus.State.SUCCEEDED, late.getState(), late.getMessage());
    assertEquals(0, engine.earlyRunsAdopted(), "executed by the query's own run");
    assertEquals(1, late.getTotalRows());

    // Replaying the same submit answers the same query; it starts nothing new.
    CommandOutcome replay = engine.send(chain.get(chain.size() - 1));
    assertEquals(accepted.getCorrelation(), replay.getCorrelation());
    for (int i = 0; i < 3; i++) {
      long c = admit(engine, engine.nextSequence(PRINCIPAL), bundle(COUNT));
      assertEquals(QueryStatus.State.SUCCEEDED, await(c).getState());
      // The early run ends (and frees its permit) just after the commit that woke the wait.
      within(5_000, () -> engine.earlyRunsRunning() == 0, "the early run ended");
    }
    assertAdopted(3, "each following statement's early run");
    within(5_000, () -> engine.allocatedBytes() == 0, "no execution buffer held");
  }

  /**
   * An early run whose result stays in memory holds nothing of the retention sweep's while it
   * waits for its submit: a sweep with a file to remove takes the write side and removes it, and
   * the submit that follows still takes the early result.
   */
  @Test
  void anEarlyRunWaitingForItsSubmitDoesNotHoldUpARetentionSweep() throws Exception {
    long adopted = engine.earlyRunsAdopted();
    // A segment file no manifest names: only a sweep that takes the write side removes it.
    byte[] stray = "stray".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    java.nio.file.Files.createDirectories(state.resolve("segments"));
    java.nio.file.Files.write(state.resolve("segments").resolve(Digests.hex(Digests.sha256(stray))),
        stray);

    // Sealed, not submitted: the early run has its one-row result in memory and waits.
    List<SignedCommand> chain = chain(engine.nextSequence(PRINCIPAL), bundle(COUNT), 200);
    sendAll(chain.subList(0, chain.size() - 1));
    Thread.sleep(200);
    assertEquals(1, engine.earlyRunsRunning());
    assertEquals(1, engine.sweepRetention().removed(), "the sweep took the write side");
    assertEquals(0, segmentFiles());
    assertEquals(1, engine.earlyRunsRunning(), "the early run still waits");

    CommandOutcome accepted = sendAll(List.of(chain.get(chain.size() - 1)));
    QueryStatus s = await(accepted.getCorrelation());
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "no early run left open, no execution buffer held");
    assertAdopted(adopted + 1, "the early run took the query");
  }

  /**
   * An early run that has nothing to adopt — here its result ran past max_result_bytes after its
   * first segments were stored — lets go of the sweep's lock at once, not after its wait for the
   * submit: those files are unreferenced, and the query's own run stores again under its own hold.
   */
  @Test
  void anEarlyRunThatFailedAfterStoringHoldsNothingWhileItWaitsForItsSubmit() throws Exception {
    RequestBundle overBudget = EngineTestSupport.bundle(demo.get(0).declaration(), LARGE,
        budgets(10_000_000, ResultWriter.INLINE_RESULT_BYTES * 4L, 1L << 28, 2048));
    List<SignedCommand> chain = chain(engine.nextSequence(PRINCIPAL), overBudget, 200);
    sendAll(chain.subList(0, chain.size() - 1)); // sealed: verified, so it may store
    within(5_000, () -> {
      try {
        return segmentFiles() > 0;
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }, "the early run stored segments");
    java.util.concurrent.locks.Lock sweep = engine.sweepHold();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!sweep.tryLock()) {
      assertTrue(System.nanoTime() - end < 0, "the write side was never free");
      Thread.sleep(5);
    }
    sweep.unlock();
    // Free well before the wait for the submit (EARLY_WAIT_MS from the failure) ended.
    Thread.sleep(100);
    assertEquals(1, engine.earlyRunsRunning(), "the early run still waits for its submit");

    CommandOutcome accepted = sendAll(List.of(chain.get(chain.size() - 1)));
    QueryStatus s = await(accepted.getCorrelation());
    assertEquals(QueryStatus.State.FAILED, s.getState());
    assertEquals("query.budget_exhausted", s.getCode(), s.getMessage());
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "no early run left open, no execution buffer held");
  }

  /**
   * The engine counts an adoption just after the commit that wakes a waiting caller: the count
   * reaches {@code n} within a bounded wait and then is exactly {@code n}.
   */
  private void assertAdopted(long n, String why) throws Exception {
    within(5_000, () -> engine.earlyRunsAdopted() >= n, why);
    assertEquals(n, engine.earlyRunsAdopted(), why);
  }

  private long segmentFiles() throws java.io.IOException {
    Path dir = state.resolve("segments");
    if (!java.nio.file.Files.isDirectory(dir)) {
      return 0;
    }
    try (java.util.stream.Stream<Path> f = java.nio.file.Files.list(dir)) {
      return f.count();
    }
  }

  @Test
  void anAnnouncedChainRunsAheadButStoresNothingBeforeItsBundleIsVerified() throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    List<SignedCommand> chain = chain(first, bundle(LARGE), 200);
    // The gateway announces the chain before its first command: the early run starts at once,
    // but a result past the inline limit holds its first segment until the seal verified them.
    engine.expect(chain);
    Thread.sleep(300);
    assertEquals(0, segmentFiles(), "no segment stored from unverified bytes");
    long correlation = sendAll(chain).getCorrelation();
    assertEquals(200_000, readBack(await(correlation)));
    assertAdopted(1, "the announced run's result was the query's");

    // An announced chain whose commands never come: abandoned after the wait, nothing stored.
    List<SignedCommand> never = chain(engine.nextSequence(PRINCIPAL), bundle(LARGE), 200);
    long stored = segmentFiles();
    engine.expect(never);
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "the unconfirmed early run gave up");
    assertEquals(stored, segmentFiles());

    // A rejected command of the chain abandons it at once, well before the wait would end.
    List<SignedCommand> bad = chain(engine.nextSequence(PRINCIPAL), bundle(COUNT), 200);
    engine.expect(bad);
    sendAll(bad.subList(0, 1));
    NativeCommand part = NativeCommand.parseFrom(bad.get(1).getCommand());
    CommandOutcome rejected = engine.send(sign(part.toBuilder().setPart(
        part.getPart().toBuilder().setIndex(part.getPart().getIndex() + 1))));
    assertEquals(CommandOutcome.Kind.REJECTED, rejected.getKind());
    within(EmbeddedEngine.EARLY_WAIT_MS / 2, () -> engine.earlyRunsRunning() == 0,
        "the rejected chain's early run ended");
    assertAdopted(1, "only the statement that reached its submit");
  }

  @Test
  void aBundleAnnouncedBeforeItsChainIsSignedRunsEarlyAndItsQueryTakesTheResult()
      throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    RequestBundle large = bundle(LARGE);
    // The gateway announces the bundle before it signs the chain; the chain's own announcement
    // then finds the run going and starts nothing.
    engine.announce(PRINCIPAL, first, DeterministicProto.bytes(large));
    within(5_000, () -> engine.earlyRunsRunning() == 1, "the announced bundle runs");
    List<SignedCommand> chain = chain(first, large, 200);
    engine.expect(chain);
    assertEquals(1, engine.earlyRunsRunning());
    assertEquals(0, segmentFiles(), "no segment stored from unverified bytes");
    long correlation = sendAll(chain).getCorrelation();
    assertEquals(200_000, readBack(await(correlation)));
    assertAdopted(1, "the announced run's result was the query's");

    // Announced one bundle, uploaded another: the chain's announcement drops the announced run,
    // and the uploaded bundle runs early from its verified seal, as an unannounced chain's does.
    // (Whether the seal finds an execution permit free depends on how soon the dropped run
    // stops; the test waits for it, so that the seal's run is certain.)
    long next = engine.nextSequence(PRINCIPAL);
    engine.announce(PRINCIPAL, next, DeterministicProto.bytes(bundle(LARGE)));
    within(5_000, () -> engine.earlyRunsRunning() == 1, "the announced bundle runs");
    List<SignedCommand> other = chain(next, bundle(COUNT), 200);
    engine.expect(other);
    within(5_000, () -> engine.earlyRunsRunning() == 0, "the announced run was dropped");
    QueryStatus s = await(sendAll(other).getCorrelation());
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    assertEquals(1, s.getTotalRows(), "the uploaded bundle's one row, not the announced 200,000");
    assertAdopted(2, "the seal's run of the uploaded bundle, not the announced run");
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "no early run left open, no execution buffer held");
  }

  @Test
  void aRetriedChainWhoseSealIsAReplayStillRunsItsQueryFromTheAnnouncedRun() throws Exception {
    // A first attempt recorded everything up to its seal, and its submit never came (a crash
    // before the submit's record): its early run gives up after the wait.
    List<SignedCommand> chain = sealedAndGivenUp(LARGE);

    // The retry announces the same chain: its begin, parts and seal are replays (no seal verifies
    // the new run), so the accepted submit's matching digest is what lets it store its result.
    engine.expect(chain);
    long correlation = sendAll(chain).getCorrelation();
    assertEquals(200_000, readBack(await(correlation)));
    assertAdopted(1, "the announced run's result was the query's");
    within(5_000, () -> engine.earlyRunsRunning() == 0 && engine.allocatedBytes() == 0,
        "no early run left open, no execution buffer held");
  }
}
