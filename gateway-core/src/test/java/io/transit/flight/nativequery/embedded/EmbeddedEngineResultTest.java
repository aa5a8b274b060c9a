package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Fact;
import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.QueryPlan.Op;
import io.transit.flight.query.QueryPlan.Output;
import io.transit.flight.query.QueryPlan.OutputKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Execution on DuckDB, retained manifests and segments, read rights, release and restart. */
class EmbeddedEngineResultTest {
  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;
  private EmbeddedEngine engine;
  private long nextFirst;

  private static final String PROJECT = "project";
  private static final String SUMS = "sums";
  private static final String MIXED_COUNT = "mixed count";
  private static final String LIMIT0 = "limit 0";
  private static final String EMPTY = "empty";
  private static final String OVERFLOW = "overflow";
  private static final String CELLS = "cells";
  private static final String COUNT_OK = "count ok";
  private static final String COUNT_BAD = "count bad";
  private static final String COUNT_BAD_ROW_0 = "count bad where id = 0";
  private static final String LONG_PROJECT = "long project";
  private static final String WHOLE = "whole table";

  private static final TablePlanner PLANNER = new TablePlanner()
      .put(PROJECT, new QueryPlan(List.of(column("id", LogicalType.INT64, false),
          column("a", LogicalType.INT64, false), column("b", LogicalType.INT64, true)),
          new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, 5000L)), null,
          false))
      .put(SUMS, new QueryPlan(List.of(
          new Output("sum_a", true, OutputKind.SUM, "a", LogicalType.INT64),
          new Output("n", false, OutputKind.COUNT_STAR, null, null),
          new Output("nb", false, OutputKind.COUNT_COLUMN, "b", LogicalType.INT64)),
          null, null, true))
      .put(MIXED_COUNT, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_STAR, null, null),
          new Output("q", true, OutputKind.SUM, "qty", LogicalType.INT64)),
          new QueryPlan.And(
              new QueryPlan.And(
                  new QueryPlan.Comparison("region", Op.EQ, new Literal(LogicalType.UTF8, "north")),
                  new QueryPlan.Comparison("flag", Op.EQ, new Literal(LogicalType.BOOL, true))),
              new QueryPlan.Or(
                  new QueryPlan.Comparison("day", Op.GE,
                      new Literal(LogicalType.DATE, LocalDate.of(2024, 6, 1))),
                  new QueryPlan.Comparison("price", Op.GT,
                      new Literal(LogicalType.FLOAT64, 100.0)))),
          null, true))
      .put(LIMIT0, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_STAR, null, null)), null, 0L, true))
      .put(EMPTY, new QueryPlan(List.of(column("id", LogicalType.INT64, false)),
          new QueryPlan.Comparison("id", Op.LT, new Literal(LogicalType.INT64, 0L)), null, false))
      .put(OVERFLOW, new QueryPlan(List.of(
          new Output("s", true, OutputKind.SUM, "huge", LogicalType.INT64)), null, null, true))
      .put(CELLS, new QueryPlan(List.of(column("ok", LogicalType.CELL_INT64, false),
          column("bad", LogicalType.CELL_INT64, false), column("big", LogicalType.UINT64, false)),
          null, null, false))
      .put(COUNT_OK, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_COLUMN, "ok", LogicalType.CELL_INT64),
          new Output("all", false, OutputKind.COUNT_STAR, null, null)), null, null, true))
      .put(COUNT_BAD, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_COLUMN, "bad", LogicalType.CELL_INT64)),
          null, null, true))
      .put(COUNT_BAD_ROW_0, new QueryPlan(List.of(
          new Output("n", false, OutputKind.COUNT_COLUMN, "bad", LogicalType.CELL_INT64)),
          new QueryPlan.Comparison("id", Op.EQ, new Literal(LogicalType.INT64, 0L)), null, true))
      .put(WHOLE, new QueryPlan(List.of(column("id", LogicalType.INT64, false),
          column("a", LogicalType.INT64, false), column("b", LogicalType.INT64, true),
          column("c", LogicalType.INT64, false), column("d", LogicalType.INT64, true)),
          null, null, false))
      .put(LONG_PROJECT, new QueryPlan(List.of(column("id", LogicalType.INT64, false)),
          null, 1000L, false));

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
    engine = EmbeddedEngine.open(state, options, demo, List.of(fullRights()), PLANNER);
  }

  private TableDeclaration table(int i) {
    return demo.get(i).declaration();
  }

  private QueryStatus run(int table, String sql, io.transit.flight.proto.Budgets budgets)
      throws Exception {
    long first = engine.nextSequence(PRINCIPAL);
    long correlation = admit(engine, first, bundle(table(table), sql, budgets));
    return engine.awaitQuery(access(), correlation, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
  }

  /** Reads and verifies the whole result: manifest digest, each segment digest, row counts. */
  private List<List<Cell>> readAll(QueryStatus s) throws Exception {
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
    byte[] bytes = engine.readManifest(access(), s.getCorrelation());
    assertArrayEquals(s.getManifestSha256().toByteArray(), Digests.sha256(bytes));
    ResultManifest m = ResultManifest.parseFrom(bytes);
    assertEquals(s.getCorrelation(), m.getCorrelation());
    assertEquals(PRINCIPAL, m.getPrincipal());
    assertEquals(s.getNamespace(), m.getNamespace());
    assertEquals(1, m.getSource());
    List<String> names = m.getColumnsList().stream().map(c -> c.getName()).toList();
    List<List<Cell>> rows = new ArrayList<>();
    for (int i = 0; i < m.getSegmentsCount(); i++) {
      SegmentRef ref = m.getSegments(i);
      byte[] seg = engine.readSegment(access(), s.getCorrelation(), i, 1L << 30);
      assertEquals(ref.getBytes(), seg.length);
      assertArrayEquals(ref.getSha256().toByteArray(), Digests.sha256(seg));
      List<List<Cell>> part = decode(seg, names);
      assertEquals(ref.getRows(), part.size());
      rows.addAll(part);
    }
    assertEquals(m.getTotalRows(), rows.size());
    assertEquals(s.getTotalRows(), rows.size());
    return rows;
  }

  @Test
  void projectionWithFilterIsSegmentedAndVerifies() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus s = run(0, PROJECT, roomyBudgets());
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    assertEquals(3, m.getSegmentsCount());
    assertEquals(List.of(2048L, 2048L, 904L),
        m.getSegmentsList().stream().map(SegmentRef::getRows).toList());
    assertArrayEquals(DeclarationFingerprint.of(table(0)),
        m.getDeclarationSha256().toByteArray());
    assertEquals(1, m.getResource());
    List<List<Cell>> rows = readAll(s);
    assertEquals(5000, rows.size());
    for (int i = 0; i < rows.size(); i++) {
      List<Cell> r = rows.get(i);
      assertEquals(new Cell(CellState.CELL_INT64_VALUE, i), r.get(0));
      assertEquals(new Cell(CellState.CELL_INT64_VALUE, 3L * i - 500000), r.get(1));
      assertEquals(i % 10 == 0 ? new Cell(CellState.CELL_NULL_VALUE, 0)
          : new Cell(CellState.CELL_INT64_VALUE, i % 1000), r.get(2));
    }
  }

  @Test
  void wholeTableProjectionKeepsOrderAcrossExportBatches() throws Exception {
    open(EngineOptions.defaults());
    List<List<Cell>> rows = readAll(run(0, WHOLE, budgets(2_000_000, 1L << 32, 1L << 28, 65_536)));
    assertEquals(DemoData.PRIMITIVE_ROWS, rows.size());
    for (int i = 0; i < rows.size(); i += 997) {
      List<Cell> r = rows.get(i);
      assertEquals(i, r.get(0).value());
      assertEquals(i % 7 - 3, r.get(3).value());
      assertEquals(i % 4 == 0 ? new Cell(CellState.CELL_NULL_VALUE, 0)
          : new Cell(CellState.CELL_INT64_VALUE, -i), r.get(4));
    }
  }

  @Test
  void sumAndCountsAreCheckedAndUnsigned() throws Exception {
    open(EngineOptions.defaults());
    List<List<Cell>> rows = readAll(run(0, SUMS, roomyBudgets()));
    assertEquals(List.of(List.of(new Cell(CellState.CELL_INT64_VALUE, 999_998_500_000L),
        new Cell(CellState.CELL_UINT64_VALUE, 1_000_000), new Cell(CellState.CELL_UINT64_VALUE,
            900_000))), rows);
  }

  @Test
  void typedFiltersOnMixedTable() throws Exception {
    open(EngineOptions.defaults());
    long count = 0;
    long qty = 0;
    for (int i = 0; i < DemoData.MIXED_ROWS; i++) {
      boolean north = i % 50 != 0 && i % 4 == 0;
      boolean flag = i % 30 != 0 && i % 3 == 0;
      boolean late = i % 60 != 0 && i % 366 >= 152;
      boolean pricey = i % 40 != 0 && (i % 1000) / 4.0 > 100.0;
      if (north && flag && (late || pricey)) {
        count++;
        qty += i % 25 == 0 ? 0 : i % 97;
      }
    }
    List<List<Cell>> rows = readAll(run(1, MIXED_COUNT, roomyBudgets()));
    assertEquals(List.of(List.of(new Cell(CellState.CELL_UINT64_VALUE, count),
        new Cell(CellState.CELL_INT64_VALUE, qty))), rows);
  }

  @Test
  void limitZeroAndEmptyResultsHaveNoSegments() throws Exception {
    open(EngineOptions.defaults());
    for (String sql : List.of(LIMIT0, EMPTY)) {
      QueryStatus s = run(0, sql, roomyBudgets());
      assertEquals(List.of(), readAll(s));
      ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
      assertEquals(0, m.getSegmentsCount());
      assertEquals(1, m.getColumnsCount());
    }
  }

  @Test
  void sumOverflowFailsTheQuery() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus s = run(2, OVERFLOW, roomyBudgets());
    assertEquals(QueryStatus.State.FAILED, s.getState());
    assertEquals("query.arithmetic_overflow", s.getCode());
    assertEquals("execution", s.getStage());
    assertEquals("s", s.getColumn());
    GatewayException e = assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), s.getCorrelation()));
    assertEquals(Cause.ARITHMETIC_OVERFLOW, e.kind());
  }

  @Test
  void cellsAreCopiedAsStored() throws Exception {
    open(EngineOptions.defaults());
    List<List<Cell>> rows = readAll(run(2, CELLS, roomyBudgets()));
    assertEquals(List.of(new Cell(1, 10), new Cell(1, 1), new Cell(2, 1)), rows.get(0));
    assertEquals(List.of(new Cell(3, 0), new Cell(4, 0), new Cell(2, -1)), rows.get(1));
    assertEquals(List.of(new Cell(1, -5), new Cell(5, 0), new Cell(2, Long.MAX_VALUE)),
        rows.get(2));
    assertEquals(List.of(new Cell(1, Long.MAX_VALUE), new Cell(6, 0), new Cell(2, 0)),
        rows.get(3));
  }

  /**
   * COUNT of a cell column counts the cells holding a value: a null cell is not one (the
   * projection gives NULL for it), and a missing, conflicted or mistyped cell among the rows
   * counted refuses the count, as the adapter refuses the cell.
   */
  @Test
  void aCountOfACellColumnCountsValuesAndRefusesInvalidCells() throws Exception {
    open(EngineOptions.defaults());
    List<List<Cell>> counted = readAll(run(2, COUNT_OK, roomyBudgets()));
    assertEquals(List.of(List.of(new Cell(2, 3), new Cell(2, 4))), counted);
    QueryStatus bad = run(2, COUNT_BAD, roomyBudgets());
    assertEquals(QueryStatus.State.FAILED, bad.getState());
    assertEquals("query.cell_state", bad.getCode());
    assertTrue(bad.getMessage().contains("CELL_MISSING"), bad.getMessage());
    assertEquals(List.of(List.of(new Cell(2, 1))),
        readAll(run(2, COUNT_BAD_ROW_0, roomyBudgets())), "row 0's cell holds a value");
  }

  @Test
  void budgetsFailWithExactLimitAndRequired() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus rowsOver = run(0, LONG_PROJECT, budgets(100, 1L << 32, 1L << 28, 2048));
    assertEquals(QueryStatus.State.FAILED, rowsOver.getState());
    assertEquals("query.budget_exhausted", rowsOver.getCode());
    assertEquals(100, rowsOver.getLimit());
    assertEquals(1000, rowsOver.getRequired());
    GatewayException e = assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), rowsOver.getCorrelation()));
    assertEquals(Cause.BUDGET_EXHAUSTED, e.kind());
    assertEquals(Fact.unsigned("limit", 100), e.facts().get("limit"));
    assertEquals(Fact.unsigned("required", 1000), e.facts().get("required"));

    QueryStatus fits = run(0, LONG_PROJECT, budgets(1000, 1L << 32, 1L << 28, 1000));
    long segmentBytes = ResultManifest.parseFrom(
        engine.readManifest(access(), fits.getCorrelation())).getSegments(0).getBytes();
    QueryStatus segOver = run(0, LONG_PROJECT, budgets(1000, 1L << 32, 1000, 1000));
    assertEquals("query.budget_exhausted", segOver.getCode());
    assertEquals(1000, segOver.getLimit());
    assertEquals(segmentBytes, segOver.getRequired());
    QueryStatus resultOver = run(0, LONG_PROJECT, budgets(1000, segmentBytes - 1, 1L << 28, 1000));
    assertEquals(segmentBytes - 1, resultOver.getLimit());
    assertEquals(segmentBytes, resultOver.getRequired());

    GatewayException tooBig = assertThrows(GatewayException.class,
        () -> engine.readSegment(access(), fits.getCorrelation(), 0, segmentBytes - 1));
    assertEquals(Cause.BUDGET_EXHAUSTED, tooBig.kind());
    assertEquals(Fact.unsigned("required", segmentBytes), tooBig.facts().get("required"));
  }

  @Test
  void readRightsAreRecheckedOnEveryRead() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus s = run(0, PROJECT, roomyBudgets());
    engine.readSegment(access(), s.getCorrelation(), 0, 1L << 30);
    engine.updateRights(List.of(rights(true, true, Set.of())));
    GatewayException denied = assertThrows(GatewayException.class,
        () -> engine.readSegment(access(), s.getCorrelation(), 1, 1L << 30));
    assertEquals(Cause.ACCESS_DENIED, denied.kind());
    engine.readManifest(access(), s.getCorrelation());
    // Without inspect the manifest is refused, while the read right alone still reads segments.
    engine.updateRights(List.of(rights(true, false, Set.of(1L))));
    assertEquals(Cause.ACCESS_DENIED, assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), s.getCorrelation())).kind());
    engine.readSegment(access(), s.getCorrelation(), 1, 1L << 30);
    // Another role or source than the result's is refused.
    engine.updateRights(List.of(fullRights()));
    assertEquals(Cause.ACCESS_DENIED, assertThrows(GatewayException.class, () ->
        engine.readSegment(new io.transit.flight.nativequery.ReadAccess(PRINCIPAL, true, 3, 1),
            s.getCorrelation(), 0, 1L << 30)).kind());
    // A correlation the principal has no query under is denied with its own code, so a gateway
    // holding a verified ticket for it can tell missing evidence from a revoked right.
    GatewayException unknown = assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), s.getCorrelation() + 1000));
    assertEquals(Cause.ACCESS_DENIED, unknown.kind());
    assertEquals(io.transit.flight.diagnostic.QueryCode.UNKNOWN_RESULT, unknown.queryCode());
    assertEquals("query.access_denied", denied.code());
  }

  @Test
  void releasedResultsAreRetiredAndMissingFilesAreEvidence() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus s = run(0, PROJECT, roomyBudgets());
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    Files.delete(state.resolve("segments").resolve(
        Digests.hex(m.getSegments(2).getSha256().toByteArray())));
    GatewayException missing = assertThrows(GatewayException.class,
        () -> engine.readSegment(access(), s.getCorrelation(), 2, 1L << 30));
    assertEquals(Cause.EVIDENCE, missing.kind());
    assertTrue(engine.release(s.getCorrelation()));
    GatewayException retired = assertThrows(GatewayException.class,
        () -> engine.readSegment(access(), s.getCorrelation(), 0, 1L << 30));
    assertEquals(Cause.RETIRED, retired.kind());
    assertEquals("query.retired", retired.code());
    assertEquals(Cause.RETIRED, assertThrows(GatewayException.class,
        () -> engine.readManifest(access(), s.getCorrelation())).kind());
  }

  @Test
  void segmentsReadIntoAnAllocatorMatchTheHeapReadAndFailClosed() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus s = run(0, PROJECT, roomyBudgets());
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    try (org.apache.arrow.memory.BufferAllocator reader =
        new org.apache.arrow.memory.RootAllocator(64 << 20)) {
      for (int i = 0; i < m.getSegmentsCount(); i++) {
        byte[] heap = engine.readSegment(access(), s.getCorrelation(), i, 1L << 30);
        try (org.apache.arrow.memory.ArrowBuf buf =
            engine.readSegment(access(), s.getCorrelation(), i, 1L << 30, reader)) {
          assertEquals(heap.length, buf.writerIndex());
          assertArrayEquals(Digests.sha256(heap), Digests.sha256(buf, buf.writerIndex()));
        }
      }
      java.nio.file.Path file = state.resolve("segments").resolve(
          Digests.hex(m.getSegments(1).getSha256().toByteArray()));
      byte[] original = Files.readAllBytes(file);
      Files.write(file, java.util.Arrays.copyOf(original, original.length - 8));
      GatewayException shorter = assertThrows(GatewayException.class,
          () -> engine.readSegment(access(), s.getCorrelation(), 1, 1L << 30, reader).close());
      assertEquals(Cause.EVIDENCE, shorter.kind());
      assertEquals("the retained segment file has the wrong size", shorter.getMessage());
      Files.delete(file);
      GatewayException missing = assertThrows(GatewayException.class,
          () -> engine.readSegment(access(), s.getCorrelation(), 1, 1L << 30, reader).close());
      assertEquals("the retained segment file is missing", missing.getMessage());
      try (org.apache.arrow.memory.BufferAllocator tiny = reader.newChildAllocator("tiny", 0, 1024)) {
        assertThrows(org.apache.arrow.memory.OutOfMemoryException.class,
            () -> engine.readSegment(access(), s.getCorrelation(), 0, 1L << 30, tiny).close());
      }
      assertEquals(0, reader.getAllocatedMemory(), "no bytes left on any path");
    }
  }

  @Test
  void restartKeepsJournalAndResultsAndResumesAcceptedQueries() throws Exception {
    open(EngineOptions.defaults());
    QueryStatus done = run(0, SUMS, roomyBudgets());
    byte[] manifest = engine.readManifest(access(), done.getCorrelation());
    closeWithoutLeaks(engine);
    engine = null;

    open(EngineOptions.defaults().withDeferExecution(true));
    long first = engine.nextSequence(PRINCIPAL);
    RequestBundle b = bundle(table(0), PROJECT, roomyBudgets());
    List<SignedCommand> chain = chain(first, b, 200);
    long correlation = admit(engine, first, b);
    QueryStatus pending = engine.awaitQuery(access(), correlation, System.nanoTime());
    assertEquals(QueryStatus.State.ACCEPTED, pending.getState());
    long next = engine.nextSequence(PRINCIPAL);
    closeWithoutLeaks(engine);
    engine = null;

    open(EngineOptions.defaults());
    assertEquals(next, engine.nextSequence(PRINCIPAL));
    assertArrayEquals(manifest, engine.readManifest(access(), done.getCorrelation()));
    QueryStatus resumed = engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    assertEquals(5000, readAll(resumed).size());
    // The submit replays its recorded outcome with the same correlation.
    assertEquals(correlation, engine.send(chain.get(chain.size() - 1)).getCorrelation());
  }

  @Test
  void anAcceptedQueryResumedAfterItsTableWasRepublishedFailsInsteadOfScanningTheNewFiles()
      throws Exception {
    open(EngineOptions.defaults().withDeferExecution(true));
    long first = engine.nextSequence(PRINCIPAL);
    long correlation = admit(engine, first, bundle(table(0), SUMS, roomyBudgets()));
    assertEquals(QueryStatus.State.ACCEPTED,
        engine.awaitQuery(access(), correlation, System.nanoTime()).getState());
    closeWithoutLeaks(engine);
    // Restarted with the Table republished: the same object id, another version of its data.
    List<Publication> republished = new ArrayList<>(demo);
    TableDeclaration old = table(0);
    republished.set(0, demo.get(0).withDeclaration(
        old.toBuilder().setMetadataRef(old.getMetadataRef() + "-v2").build()));
    engine = EmbeddedEngine.open(state, EngineOptions.defaults(), republished,
        List.of(fullRights()), PLANNER);
    QueryStatus resumed = engine.awaitQuery(access(), correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    // Until 2026-12-07 it ran the old statement over the new files and recorded their rows.
    assertEquals(QueryStatus.State.FAILED, resumed.getState());
    assertEquals("query.source_unavailable", resumed.getCode(), resumed.getMessage());
    assertNoExecutionBuffers(engine);
  }
}
