package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo data set, and loading Parquet, CSV and Arrow IPC publications with type checks. */
class PublicationLoadingTest {
  @TempDir static Path data;
  @TempDir Path state;
  private static List<Publication> demo;

  @BeforeAll
  static void demo() throws Exception {
    demo = DemoData.generate(data);
  }

  @Test
  void demoFilesHaveTheDeclaredRowsTypesAndNulls() throws Exception {
    assertEquals(List.of(DemoData.PRIMITIVE, DemoData.MIXED, DemoData.CELLS),
        demo.stream().map(p -> p.declaration().getTable()).toList());
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      long[] rows = {DemoData.PRIMITIVE_ROWS, DemoData.MIXED_ROWS, 4};
      for (int i = 0; i < demo.size(); i++) {
        Publication p = demo.get(i);
        String read = "read_parquet('" + p.files().get(0) + "')";
        try (ResultSet r = s.executeQuery("SELECT count(*) FROM " + read)) {
          r.next();
          assertEquals(rows[i], r.getLong(1), p.declaration().getTable());
        }
        List<String> types = new ArrayList<>();
        try (ResultSet r = s.executeQuery("DESCRIBE SELECT * FROM " + read)) {
          while (r.next()) {
            types.add(r.getString(1) + " " + r.getString(2).replace("\"", ""));
          }
        }
        List<String> expected = new ArrayList<>();
        for (ColumnDeclaration col : p.declaration().getColumnsList()) {
          expected.add(col.getName() + " "
              + DuckTables.duckType(LogicalType.valueOf(col.getLogicalType())).replace("\"", ""));
        }
        assertEquals(expected, types);
      }
      try (ResultSet r = s.executeQuery("SELECT count(*) - count(b), count(*) - count(d),"
          + " count(*) - count(a) FROM read_parquet('" + demo.get(0).files().get(0) + "')")) {
        r.next();
        assertEquals(100_000, r.getLong(1));
        assertEquals(250_000, r.getLong(2));
        assertEquals(0, r.getLong(3));
      }
    }
  }

  @Test
  void mismatchedDeclarationIsAStartupErrorNamingTheColumn() {
    TableDeclaration d = demo.get(2).declaration();
    TableDeclaration wrong = d.toBuilder()
        .setColumns(4, d.getColumns(4).toBuilder().setLogicalType("UTF8")).build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
        EmbeddedEngine.open(state, EngineOptions.defaults(),
            List.of(demo.get(2).withDeclaration(wrong)), List.of(fullRights()),
            new TablePlanner()));
    assertTrue(e.getMessage().contains("demo_cells") && e.getMessage().contains("huge"),
        e.getMessage());
    TableDeclaration notNull = d.toBuilder().setObjectId(9).build();
    TableDeclaration primitive = demo.get(0).declaration();
    TableDeclaration bNotNull = primitive.toBuilder()
        .setColumns(2, primitive.getColumns(2).toBuilder().setNullable(false)).build();
    IllegalArgumentException nulls = assertThrows(IllegalArgumentException.class, () ->
        EmbeddedEngine.open(state, EngineOptions.defaults(),
            List.of(demo.get(2).withDeclaration(notNull), demo.get(0).withDeclaration(bNotNull)),
            List.of(fullRights()), new TablePlanner()));
    assertTrue(nulls.getMessage().contains("column b"), nulls.getMessage());
  }

  @Test
  void csvAndArrowIpcPublicationsLoadAndAnswer() throws Exception {
    Path csv = data.resolve("t.csv");
    Files.writeString(csv, "k,v\n1,10\n2,\n3,-4\n");
    Path arrow = data.resolve("t.arrow");
    try (RootAllocator allocator = new RootAllocator();
        VectorSchemaRoot root = VectorSchemaRoot.of(new BigIntVector("k", allocator));
        FileOutputStream out = new FileOutputStream(arrow.toFile());
        ArrowFileWriter writer = new ArrowFileWriter(root, null, out.getChannel())) {
      BigIntVector k = (BigIntVector) root.getVector(0);
      k.allocateNew(3);
      k.set(0, 5);
      k.setNull(1);
      k.set(2, 7);
      root.setRowCount(3);
      writer.start();
      writer.writeBatch();
      writer.end();
    }
    TableDeclaration csvTable = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("csv_t").setObjectId(20).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("v").setLogicalType("INT64")
            .setNullable(true))
        .build();
    TableDeclaration arrowTable = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("arrow_t").setObjectId(21).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64")
            .setNullable(true))
        .build();
    TablePlanner planner = new TablePlanner()
        .put("sum v", new QueryPlan(List.of(new QueryPlan.Output("s", true,
            QueryPlan.OutputKind.SUM, "v", LogicalType.INT64)), null, null, true))
        .put("k", new QueryPlan(List.of(column("k", LogicalType.INT64, true)), null, null, false));
    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(new Publication(csvTable, List.of(csv), "csv"),
            new Publication(arrowTable, List.of(arrow), "arrow")),
        List.of(fullRights()), planner)) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      long c1 = admit(engine, 1, bundle(csvTable, "sum v", roomyBudgets()));
      QueryStatus s1 = engine.awaitQuery(access(), c1, deadline);
      assertEquals(QueryStatus.State.SUCCEEDED, s1.getState(), s1.getMessage());
      assertEquals(List.of(List.of(new Cell(CellState.CELL_INT64_VALUE, 6))),
          decode(engine.readSegment(access(), c1, 0, 1 << 20), List.of("s")));
      long c2 = admit(engine, engine.nextSequence(PRINCIPAL),
          bundle(arrowTable, "k", roomyBudgets()));
      QueryStatus s2 = engine.awaitQuery(access(), c2, deadline);
      assertEquals(QueryStatus.State.SUCCEEDED, s2.getState(), s2.getMessage());
      ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), c2));
      assertEquals(1, m.getSegmentsCount());
      assertEquals(List.of(List.of(new Cell(1, 5)), List.of(new Cell(3, 0)), List.of(new Cell(1, 7))),
          decode(engine.readSegment(access(), c2, 0, 1 << 20), List.of("k")));
      assertNoExecutionBuffers(engine);
    }
  }

  /**
   * A CSV file's header must name the declared columns in declared order: read_csv takes declared
   * columns by position, so a file whose header says {@code v,k} was served with k and v swapped
   * (found by the type-fidelity audit). A quoted empty field is an empty string, not NULL.
   */
  @Test
  void aCsvHeaderMustNameTheDeclaredColumnsAndAQuotedEmptyFieldIsAString() throws Exception {
    Path swapped = data.resolve("swapped.csv");
    Files.writeString(swapped, "v,k\n10,1\n20,2\n");
    TableDeclaration kv = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("swapped").setObjectId(22).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("v").setLogicalType("INT64"))
        .build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
        EmbeddedEngine.open(state, EngineOptions.defaults(),
            List.of(new Publication(kv, List.of(swapped), "csv")), List.of(fullRights()),
            new TablePlanner()).close());
    assertTrue(e.getMessage().contains("swapped") && e.getMessage().contains("column k")
        && e.getMessage().contains("header has v"), e.getMessage());

    // PyArrow's CSV writer: "" for an empty string, nothing for a null.
    Path strings = data.resolve("strings.csv");
    Files.writeString(strings, "\"k\",\"s\"\n1,\"\"\n2,\n3,x\n");
    TableDeclaration ks = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("strings").setObjectId(23).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("s").setLogicalType("UTF8")
            .setNullable(true))
        .build();
    TablePlanner planner = new TablePlanner()
        .put("count s", new QueryPlan(List.of(new QueryPlan.Output("n", false,
            QueryPlan.OutputKind.COUNT_COLUMN, "s", LogicalType.UTF8)), null, null, true))
        .put("k where s is empty", new QueryPlan(List.of(column("k", LogicalType.INT64, false)),
            new QueryPlan.Comparison("s", QueryPlan.Op.EQ, new QueryPlan.Literal(LogicalType.UTF8,
                "")), null, false));
    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(new Publication(ks, List.of(strings), "csv")), List.of(fullRights()), planner)) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      long c1 = admit(engine, 1, bundle(ks, "count s", roomyBudgets()));
      assertEquals(QueryStatus.State.SUCCEEDED, engine.awaitQuery(access(), c1, deadline).getState());
      assertEquals(List.of(List.of(new Cell(CellState.CELL_UINT64_VALUE, 2))),
          decode(engine.readSegment(access(), c1, 0, 1 << 20), List.of("n")));
      long c2 = admit(engine, engine.nextSequence(PRINCIPAL),
          bundle(ks, "k where s is empty", roomyBudgets()));
      assertEquals(QueryStatus.State.SUCCEEDED, engine.awaitQuery(access(), c2, deadline).getState());
      assertEquals(List.of(List.of(new Cell(CellState.CELL_INT64_VALUE, 1))),
          decode(engine.readSegment(access(), c2, 0, 1 << 20), List.of("k")));
      assertNoExecutionBuffers(engine);
    }
  }

  /**
   * A CSV field is served only as exactly the value its text says: DuckDB's casts rounded 1.5 to
   * an INT64 2 and cut a timestamp to its DATE (found by the type-fidelity audit). Any field that
   * is not the exact text of a value of its declared type fails the start, naming the
   * publication, the column, the row and the file.
   */
  @Test
  void aCsvFieldThatIsNotExactlyAValueOfItsTypeFailsTheStart() throws Exception {
    Path audit = data.resolve("audit.csv");
    Files.writeString(audit, "k,d\n1.5,2024-01-05 23:59:59\n2.5,2024-1-5\n-0.5,2024-01-05\n"
        + "1e3,2024-01-06\n");
    TableDeclaration kd = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("audit").setObjectId(24).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("d").setLogicalType("DATE"))
        .build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
        EmbeddedEngine.open(state, EngineOptions.defaults(),
            List.of(new Publication(kd, List.of(audit), "csv")), List.of(fullRights()),
            new TablePlanner()).close());
    assertTrue(e.getMessage().contains("publication audit: column k is INT64 but row 1")
        && e.getMessage().contains("\"1.5\"") && e.getMessage().contains("audit.csv"),
        e.getMessage());

    // Row 1 holds a good value, row 2 the refused text.
    String[][] refused = {
        {"INT64", "5", "1.5"}, {"INT64", "5", "1e3"}, {"INT64", "5", " 7"}, {"INT64", "5", "+7"},
        {"INT64", "5", "\"\""}, {"INT64", "5", "9223372036854775808"},
        {"UINT64", "5", "-1"}, {"UINT64", "5", "18446744073709551616"},
        {"DATE", "2024-01-05", "2024-01-05 23:59:59"}, {"DATE", "2024-01-05", "2024-1-5"},
        {"DATE", "2024-01-05", "2024-02-30"}, {"DATE", "2024-01-05", "24-01-05"},
        {"DATE", "2024-01-05", "2024-01-05T00:00:00"},
        {"BOOL", "true", "1"}, {"BOOL", "true", "t"}, {"BOOL", "true", "yes"},
        {"FLOAT64", "2.5", "abc"}, {"FLOAT64", "2.5", "\"\""},
    };
    for (int i = 0; i < refused.length; i++) {
      String[] c = refused[i];
      Path f = data.resolve("refused" + i + ".csv");
      Files.writeString(f, "k,v\n1," + c[1] + "\n2," + c[2] + "\n");
      TableDeclaration kv = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
          .setTable("refused" + i).setObjectId(30 + i).setSource(1)
          .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
          .addColumns(ColumnDeclaration.newBuilder().setName("v").setLogicalType(c[0])
              .setNullable(true))
          .build();
      IllegalArgumentException r = assertThrows(IllegalArgumentException.class, () ->
          EmbeddedEngine.open(state, EngineOptions.defaults(),
              List.of(new Publication(kv, List.of(f), "csv")), List.of(fullRights()),
              new TablePlanner()).close(), c[0] + " " + c[2]);
      assertTrue(r.getMessage().contains("publication refused" + i + ": column v is " + c[0]
          + " but row 2 of the CSV file") && r.getMessage().contains("refused" + i + ".csv"),
          r.getMessage());
    }

    // Each type's exact texts, at the edges of their ranges, are served as written.
    Path exact = data.resolve("exact.csv");
    Files.writeString(exact, "k,u,f,s,d,b\n"
        + "-0,18446744073709551615,1e3,x,2024-01-05,true\n"
        + "9223372036854775807,007,-0.5,\"\",0999-12-31,False\n"
        + "-9223372036854775808,0,inf,,,TRUE\n");
    TableDeclaration all = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("exact").setObjectId(25).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("u").setLogicalType("UINT64")
            .setNullable(true))
        .addColumns(ColumnDeclaration.newBuilder().setName("f").setLogicalType("FLOAT64")
            .setNullable(true))
        .addColumns(ColumnDeclaration.newBuilder().setName("s").setLogicalType("UTF8")
            .setNullable(true))
        .addColumns(ColumnDeclaration.newBuilder().setName("d").setLogicalType("DATE")
            .setNullable(true))
        .addColumns(ColumnDeclaration.newBuilder().setName("b").setLogicalType("BOOL")
            .setNullable(true))
        .build();
    EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(new Publication(all, List.of(exact), "csv")), List.of(fullRights()),
        new TablePlanner()).close();
    List<Path> copies;
    try (var files = Files.list(state.resolve("converted"))) {
      copies = files.toList();
    }
    assertEquals(1, copies.size(), copies.toString());
    List<String> rows = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT concat_ws('|', k, u, f, coalesce(s, 'NULL'),"
            + " coalesce(CAST(d AS VARCHAR), 'NULL'), b) FROM read_parquet('" + copies.get(0)
            + "')")) {
      while (r.next()) {
        rows.add(r.getString(1));
      }
    }
    assertEquals(List.of("0|18446744073709551615|1000.0|x|2024-01-05|true",
        "9223372036854775807|7|-0.5||0999-12-31|false",
        "-9223372036854775808|0|inf|NULL|NULL|true"), rows);
  }
}
