package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.QueryPlan.Op;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine with its segments in a real versitygw bucket: results are written there (nothing in
 * the state directory), read back verified, still read after the engine reopens; with the store
 * stopped a statement is recorded FAILED {@code query.segment_store_unavailable} (outcome failed)
 * and a read is UNAVAILABLE with outcome incomplete, and both work again once it is back.
 */
class EmbeddedEngineS3SegmentsTest {
  @TempDir static Path data;
  @TempDir static Path gwDir;
  @TempDir Path state;
  private static List<Publication> demo;
  private static Versitygw gw;
  private EmbeddedEngine engine;

  private static final String FIRST = "first 5000";
  private static final String NEXT = "next 5000";
  private static final TablePlanner PLANNER = new TablePlanner()
      .put(FIRST, range(0, 5000))
      .put(NEXT, range(5000, 10_000));

  private static QueryPlan range(long from, long to) {
    return new QueryPlan(List.of(column("id", LogicalType.INT64, false),
        column("a", LogicalType.INT64, false)),
        new QueryPlan.And(new QueryPlan.Comparison("id", Op.GE, new Literal(LogicalType.INT64, from)),
            new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, to))),
        null, false);
  }

  @BeforeAll
  static void start() throws Exception {
    demo = DemoData.generate(data);
    gw = Versitygw.start(gwDir);
    gw.createBucket("engine");
  }

  @AfterAll
  static void stop() throws Exception {
    gw.close();
  }

  @AfterEach
  void close() throws InterruptedException {
    if (engine != null) {
      closeWithoutLeaks(engine);
    }
  }

  private void open() throws Exception {
    engine = EmbeddedEngine.open(state, EngineOptions.defaults()
            .withSegments(gw.settings("engine", state.getFileName() + "/")),
        demo, List.of(fullRights()), PLANNER);
  }

  private QueryStatus run(String sql) throws InterruptedException {
    return await(send(sql), 30);
  }

  private long send(String sql) {
    long first = engine.nextSequence(PRINCIPAL);
    return admit(engine, first, bundle(demo.get(0).declaration(), sql,
        budgets(1_000_000, 1L << 30, 1L << 20, 2048)));
  }

  /** The query's status once terminal, or as it stands after {@code seconds}. */
  private QueryStatus await(long correlation, int seconds) throws InterruptedException {
    return engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds));
  }

  /** Every segment of the result, read into Arrow buffers and checked against the manifest. */
  private List<byte[]> readVerified(QueryStatus s) throws Exception {
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    List<byte[]> out = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator(64L << 20)) {
      for (int i = 0; i < m.getSegmentsCount(); i++) {
        SegmentRef ref = m.getSegments(i);
        try (ArrowBuf buf = engine.readSegment(access(), s.getCorrelation(), i, 1L << 30,
            allocator)) {
          assertEquals(ref.getBytes(), buf.writerIndex());
          assertArrayEquals(ref.getSha256().toByteArray(), Digests.sha256(buf, buf.writerIndex()));
          byte[] b = new byte[(int) buf.writerIndex()];
          buf.getBytes(0, b);
          out.add(b);
        }
      }
    }
    return out;
  }

  @Test
  void resultsAreObjectsInTheBucketAndReadAfterTheEngineReopens() throws Exception {
    open();
    QueryStatus s = run(FIRST);
    List<byte[]> segments = readVerified(s);
    assertEquals(3, segments.size());
    Path objects = gw.root.resolve("engine").resolve(state.getFileName().toString());
    try (var files = Files.list(objects)) {
      assertEquals(3, files.count());
    }
    assertFalse(Files.exists(state.resolve("segments")), "nothing in the state directory");
    closeWithoutLeaks(engine);
    open();
    List<byte[]> again = readVerified(s);
    for (int i = 0; i < segments.size(); i++) {
      assertArrayEquals(segments.get(i), again.get(i));
    }
  }

  @Test
  void anUnreachableStoreHoldsTheStatementAndFailsTheReadDefinitelyUntilItIsBack()
      throws Exception {
    open();
    QueryStatus ok = run(FIRST);
    List<byte[]> before = readVerified(ok);
    gw.stop();
    long held;
    try {
      // The store cannot take the segments: nothing is recorded, the query stays ACCEPTED and
      // runs again (its sequence is not spent) until the store is back.
      held = send(NEXT);
      // Its waiter is not kept until its deadline: once the store does not answer it gets
      // UNAVAILABLE, outcome unknown, retry with the same sequence and SQL.
      GatewayException waiting = assertThrows(GatewayException.class, () -> await(held, 30));
      assertEquals(QueryCode.SEGMENT_STORE_UNAVAILABLE, waiting.queryCode());
      assertEquals(io.grpc.Status.Code.UNAVAILABLE, waiting.kind().code());
      assertEquals(Outcome.UNKNOWN, waiting.outcome());
      assertEquals(QueryStatus.State.ACCEPTED, await(held, 0).getState());
      try (BufferAllocator allocator = new RootAllocator(1L << 20)) {
        GatewayException read = assertThrows(GatewayException.class,
            () -> engine.readSegment(access(), ok.getCorrelation(), 0, 1L << 30, allocator));
        assertEquals(QueryCode.SEGMENT_STORE_UNAVAILABLE, read.queryCode());
        assertEquals(Outcome.INCOMPLETE, read.outcome());
        assertEquals(0, allocator.getAllocatedMemory());
      }
    } finally {
      gw.restart();
    }
    List<byte[]> after = readVerified(ok);
    for (int i = 0; i < before.size(); i++) {
      assertArrayEquals(before.get(i), after.get(i));
    }
    // The held statement completes with its own correlation once the store takes its segments
    // (the engine's rerun pause doubles up to 5 s), and reads back verified.
    QueryStatus resumed = await(held, 60);
    assertEquals(QueryStatus.State.SUCCEEDED, resumed.getState(), resumed.getMessage());
    assertEquals(held, resumed.getCorrelation());
    assertFalse(readVerified(resumed).isEmpty());
    assertEquals(QueryStatus.State.SUCCEEDED, run(NEXT).getState(),
        "a new statement (the next sequence) runs once the store is back");
  }
}
