package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.QueryPlan.Op;
import io.transit.flight.query.QueryPlan.Output;
import io.transit.flight.query.QueryPlan.OutputKind;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * COUNT of a CELL_INT64 column reads each cell as the projection does (docs/queries.md, note 2):
 * a NULL struct is a null cell (the projection returns NULL), a struct without a state, or with a
 * number state and no value, is a missing cell (the projection refuses it with query.cell_state).
 * Found by the type-fidelity audit: the count refused a NULL struct as DATA_LOSS query.evidence,
 * and counted the others silently (0 and 1) where the projection refused them.
 */
class CellCountTest {
  @TempDir Path data;
  @TempDir Path state;

  private static final TableDeclaration TABLE = TableDeclaration.newBuilder().setCatalog("c")
      .setDbSchema("s").setTable("cells").setObjectId(41).setSource(1)
      .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
      .addColumns(ColumnDeclaration.newBuilder().setName("c").setLogicalType("CELL_INT64")
          .setNullable(true))
      .build();

  /** Row k: 0 a value, 1 a null cell, 2 a NULL struct, 3 no state, 4 int64 state without value. */
  private static final String ROWS = "SELECT * FROM (VALUES"
      + " (0::BIGINT, {'state': 1::UTINYINT, 'value': 10::BIGINT}),"
      + " (1, {'state': 3::UTINYINT, 'value': NULL::BIGINT}),"
      + " (2, NULL),"
      + " (3, {'state': NULL::UTINYINT, 'value': 5::BIGINT}),"
      + " (4, {'state': 1::UTINYINT, 'value': NULL::BIGINT})) v(k, c) ORDER BY k";

  private static QueryPlan count(long... keys) {
    List<Literal> in = new ArrayList<>();
    for (long k : keys) {
      in.add(new Literal(LogicalType.INT64, k));
    }
    return new QueryPlan(List.of(
        new Output("n", false, OutputKind.COUNT_COLUMN, "c", LogicalType.CELL_INT64),
        new Output("all", false, OutputKind.COUNT_STAR, null, null)),
        keys.length == 1 ? new QueryPlan.Comparison("k", Op.EQ, in.get(0))
            : new QueryPlan.InList("k", in, false), null, true);
  }

  private static final TablePlanner PLANNER = new TablePlanner()
      .put("count values and nulls", count(0, 1, 2))
      .put("count no state", count(3))
      .put("count no value", count(4))
      .put("project values and nulls", new QueryPlan(List.of(column("c", LogicalType.CELL_INT64,
          true)), new QueryPlan.Comparison("k", Op.LE, new Literal(LogicalType.INT64, 2L)),
          null, false));

  private Path parquet() throws Exception {
    Path f = data.resolve("cells.parquet");
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      s.execute("COPY (" + ROWS + ") TO '" + f + "' (FORMAT parquet)");
    }
    return f;
  }

  private static QueryStatus run(EmbeddedEngine engine, String sql) throws Exception {
    long c = admit(engine, engine.nextSequence(PRINCIPAL), bundle(TABLE, sql, roomyBudgets()));
    return engine.awaitQuery(access(), c, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
  }

  private static List<List<Cell>> rows(EmbeddedEngine engine, QueryStatus s, List<String> names)
      throws Exception {
    assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getCode() + " " + s.getMessage());
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    List<List<Cell>> rows = new ArrayList<>();
    for (int i = 0; i < m.getSegmentsCount(); i++) {
      rows.addAll(decode(engine.readSegment(access(), s.getCorrelation(), i, 64 << 20), names));
    }
    return rows;
  }

  @Test
  void aCountReadsEachCellAsTheProjectionDoes() throws Exception {
    Publication p = new Publication(TABLE, List.of(parquet()), "parquet");
    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(), List.of(p),
        List.of(fullRights()), PLANNER)) {
      // The projection: a value, then two null cells (state null, NULL struct).
      assertEquals(List.of(List.of(new Cell(CellState.CELL_INT64_VALUE, 10)),
              List.of(new Cell(CellState.CELL_NULL_VALUE, 0)),
              List.of(new Cell(CellState.CELL_NULL_VALUE, 0))),
          rows(engine, run(engine, "project values and nulls"), List.of("c")));
      // The count: one value among the three, the two null cells not counted, nothing refused.
      assertEquals(List.of(List.of(new Cell(CellState.CELL_UINT64_VALUE, 1),
              new Cell(CellState.CELL_UINT64_VALUE, 3))),
          rows(engine, run(engine, "count values and nulls"), List.of("n", "all")));
      for (String missing : List.of("count no state", "count no value")) {
        QueryStatus s = run(engine, missing);
        assertEquals(QueryStatus.State.FAILED, s.getState(), missing);
        assertEquals("query.cell_state", s.getCode(), missing + ": " + s.getMessage());
        assertTrue(s.getMessage().contains("CELL_MISSING"), s.getMessage());
      }
      assertNoExecutionBuffers(engine);
    }
  }
}
