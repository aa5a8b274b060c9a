package io.transit.flight.nativequery.embedded;

import static io.transit.flight.nativequery.embedded.EngineTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.duckdb.DuckDBConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Publications scanned in place: opening reads footers only, row order is file order then
 * row-group order across restarts, a published file that changes fails the statement
 * FAILED_PRECONDITION naming the file, and nullability is proven from metadata.
 */
class InPlaceScanTest {
  @TempDir Path data;
  @TempDir Path state;

  private static final TableDeclaration TABLE = TableDeclaration.newBuilder().setCatalog("c")
      .setDbSchema("s").setTable("t").setObjectId(31).setSource(1)
      .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
      .addColumns(ColumnDeclaration.newBuilder().setName("v").setLogicalType("INT64")
          .setNullable(true))
      .build();
  private static final TableDeclaration OTHER = TABLE.toBuilder().setTable("u").setObjectId(32)
      .build();
  private static final TablePlanner PLANNER = new TablePlanner()
      .put("k", new QueryPlan(List.of(column("k", LogicalType.INT64, false)), null, null, false))
      .put("sum v", new QueryPlan(List.of(new QueryPlan.Output("s", true,
          QueryPlan.OutputKind.SUM, "v", LogicalType.INT64)), null, null, true));

  /** Writes {@code rows} rows k = first.., v = k * 10, in row groups of {@code groupRows}. */
  private Path parquet(String name, long first, long rows, long groupRows) throws Exception {
    Path f = data.resolve(name);
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      // Descending inside the file, so file order cannot be mistaken for sorted order.
      s.execute("COPY (SELECT (" + first + " + " + rows + " - 1 - i)::BIGINT AS k,"
          + " ((" + first + " + " + rows + " - 1 - i) * 10)::BIGINT AS v FROM range(" + rows
          + ") t(i) ORDER BY i) TO '" + f + "' (FORMAT parquet, ROW_GROUP_SIZE " + groupRows
          + ")");
    }
    return f;
  }

  private EmbeddedEngine open(List<Publication> pubs) throws Exception {
    return EmbeddedEngine.open(state, EngineOptions.defaults(), pubs, List.of(fullRights()),
        PLANNER);
  }

  private static QueryStatus run(EmbeddedEngine engine, TableDeclaration t, String sql)
      throws Exception {
    long c = admit(engine, engine.nextSequence(PRINCIPAL), bundle(t, sql, roomyBudgets()));
    return engine.awaitQuery(access(), c, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
  }

  private static List<Long> keys(EmbeddedEngine engine, QueryStatus s) throws Exception {
    ResultManifest m = ResultManifest.parseFrom(engine.readManifest(access(), s.getCorrelation()));
    List<Long> keys = new ArrayList<>();
    for (int i = 0; i < m.getSegmentsCount(); i++) {
      for (List<Cell> row : decode(
          engine.readSegment(access(), s.getCorrelation(), i, 64 << 20), List.of("k"))) {
        keys.add(row.get(0).value());
      }
    }
    return keys;
  }

  /** Three files of several row groups each, listed out of key order: first key, rows, group. */
  private static final long[][] THREE_FILES = {
    {30_000, 25_000, 4_000}, {0, 20_000, 3_000}, {70_000, 9_000, 2_000}};

  private List<Path> threeFiles() throws Exception {
    List<Path> files = new ArrayList<>();
    for (int i = 0; i < THREE_FILES.length; i++) {
      long[] f = THREE_FILES[i];
      files.add(parquet("bac".charAt(i) + ".parquet", f[0], f[1], f[2]));
    }
    return files;
  }

  /** The keys of {@link #threeFiles} in file order (descending within each file). */
  private static List<Long> threeFilesKeys() {
    List<Long> keys = new ArrayList<>();
    for (long[] f : THREE_FILES) {
      for (long k = f[0] + f[1] - 1; k >= f[0]; k--) {
        keys.add(k);
      }
    }
    return keys;
  }

  @Test
  void rowsComeInFileThenRowGroupOrderAndTheSameAfterARestart() throws Exception {
    List<Path> files = threeFiles();
    List<Long> expected = threeFilesKeys();
    Publication p = new Publication(TABLE, files, "parquet");
    List<Long> first;
    byte[] firstManifestDigest;
    try (EmbeddedEngine engine = open(List.of(p))) {
      QueryStatus s = run(engine, TABLE, "k");
      assertEquals(QueryStatus.State.SUCCEEDED, s.getState(), s.getMessage());
      first = keys(engine, s);
      firstManifestDigest = s.getManifestSha256().toByteArray();
      assertNoExecutionBuffers(engine);
    }
    assertEquals(expected, first);
    // A fresh engine state, as after losing the retained results: the same plan over the same
    // files writes the same rows in the same order, so the same manifest digest.
    Path again = Files.createDirectory(state.resolve("again"));
    try (EmbeddedEngine engine = EmbeddedEngine.open(again, EngineOptions.defaults(), List.of(p),
        List.of(fullRights()), PLANNER)) {
      QueryStatus s = run(engine, TABLE, "k");
      assertEquals(first, keys(engine, s));
      assertArrayEquals(firstManifestDigest, s.getManifestSha256().toByteArray());
      assertNoExecutionBuffers(engine);
    }
  }

  @Test
  void aChangedFileFailsTheStatementNamingItWhileOtherTablesAndOldResultsServe()
      throws Exception {
    Path changing = parquet("changing.parquet", 0, 1_000, 500);
    Path steady = parquet("steady.parquet", 0, 1_000, 500);
    try (EmbeddedEngine engine = open(List.of(new Publication(TABLE, List.of(changing),
        "parquet"), new Publication(OTHER, List.of(steady), "parquet")))) {
      QueryStatus before = run(engine, TABLE, "sum v");
      assertEquals(QueryStatus.State.SUCCEEDED, before.getState(), before.getMessage());
      byte[] retained = engine.readSegment(access(), before.getCorrelation(), 0, 1 << 20);

      // Same size, same footer, only the modification time: still another file as far as the
      // published identity goes.
      Files.setLastModifiedTime(changing, FileTime.fromMillis(
          Files.getLastModifiedTime(changing).toMillis() - 60_000));
      QueryStatus touched = run(engine, TABLE, "sum v");
      assertEquals(QueryStatus.State.FAILED, touched.getState());
      assertEquals("query.source_changed", touched.getCode());
      assertTrue(touched.getMessage().contains("changing.parquet")
          && touched.getMessage().contains("modification time"), touched.getMessage());

      // Rewritten with other rows: another size and footer.
      parquet("changing.parquet", 5, 2_000, 500);
      QueryStatus rewritten = run(engine, TABLE, "k");
      assertEquals("query.source_changed", rewritten.getCode(), rewritten.getMessage());

      Files.delete(changing);
      QueryStatus missing = run(engine, TABLE, "k");
      assertEquals("query.source_changed", missing.getCode());
      assertTrue(missing.getMessage().contains("missing"), missing.getMessage());

      QueryStatus other = run(engine, OTHER, "sum v");
      assertEquals(QueryStatus.State.SUCCEEDED, other.getState(), other.getMessage());
      assertArrayEquals(retained,
          engine.readSegment(access(), before.getCorrelation(), 0, 1 << 20),
          "a result retained before the change still reads back unchanged");
      assertNoExecutionBuffers(engine);
    }
  }

  /**
   * Past max_result_rows the export stops at once and DuckDB counts the rest (no row of it
   * exported); the failure still names the exact total, across files and row groups.
   */
  @Test
  void aResultPastItsRowBudgetStopsExportingAndStillNamesItsExactSize() throws Exception {
    List<Path> files = List.of(parquet("r1.parquet", 0, 400_000, 30_000),
        parquet("r2.parquet", 400_000, 350_001, 25_000));
    try (EmbeddedEngine engine = open(List.of(new Publication(TABLE, files, "parquet")))) {
      long c = admit(engine, engine.nextSequence(PRINCIPAL),
          bundle(TABLE, "k", budgets(10, 1L << 32, 1L << 28, 2048)));
      QueryStatus s = engine.awaitQuery(access(), c,
          System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
      assertEquals("query.budget_exhausted", s.getCode(), s.getMessage());
      assertEquals(10, s.getLimit());
      assertEquals(750_001, s.getRequired());
      // The session that counted serves the next statement as before.
      QueryStatus sum = run(engine, TABLE, "sum v");
      assertEquals(QueryStatus.State.SUCCEEDED, sum.getState(), sum.getMessage());
      assertNoExecutionBuffers(engine);
    }
  }

  @Test
  void openingReadsFootersNotData() throws Exception {
    Path f = parquet("damaged.parquet", 0, 200_000, 50_000);
    // Overwrite every data page with 0xFF; the footer (and its length and magic) stays intact.
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.seek(raf.length() - 8);
      int footer = Integer.reverseBytes(raf.readInt());
      byte[] junk = new byte[(int) (raf.length() - 8 - footer - 4)];
      java.util.Arrays.fill(junk, (byte) 0xFF);
      raf.seek(4);
      raf.write(junk);
    }
    long started = System.nanoTime();
    try (EmbeddedEngine engine = open(List.of(new Publication(TABLE, List.of(f), "parquet")))) {
      // Opened: nothing read the damaged pages. Scanning them fails the statement instead.
      QueryStatus s = run(engine, TABLE, "sum v");
      assertEquals(QueryStatus.State.FAILED, s.getState());
      assertNoExecutionBuffers(engine);
    }
    assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30));
  }

  /**
   * A UTF8 value that is not UTF-8 is the published file's fault, met by every run: the statement
   * fails DATA_LOSS query.evidence, not query.internal (a defect with its outcome unknown), found
   * by the type-fidelity audit. DuckDB checks a Parquet string only when it reads it (a filter on
   * the column), and takes Arrow strings unchecked, so an Arrow IPC publication's copy holds the
   * same bytes and fails alike.
   */
  @Test
  void aUtf8ValueThatIsNotUtf8FailsItsStatementAsDamagedDataNotInternal() throws Exception {
    Path arrow = data.resolve("s.arrow");
    try (RootAllocator allocator = new RootAllocator();
        VectorSchemaRoot root = VectorSchemaRoot.of(new BigIntVector("k", allocator),
            new VarCharVector("s", allocator));
        FileOutputStream out = new FileOutputStream(arrow.toFile());
        ArrowFileWriter writer = new ArrowFileWriter(root, null, out.getChannel())) {
      BigIntVector k = (BigIntVector) root.getVector(0);
      VarCharVector str = (VarCharVector) root.getVector(1);
      k.allocateNew(3);
      str.allocateNew(3);
      byte[][] values = {"ok".getBytes(StandardCharsets.UTF_8), {(byte) 0xFF, (byte) 0xFE},
          "a".getBytes(StandardCharsets.UTF_8)};
      for (int i = 0; i < values.length; i++) {
        k.set(i, i + 1);
        str.set(i, values[i]); // Arrow Java does not check UTF-8
      }
      root.setRowCount(values.length);
      writer.start();
      writer.writeBatch();
      writer.end();
    }
    Path parquet = data.resolve("s.parquet");
    try (RootAllocator allocator = new RootAllocator();
        DuckDBConnection c = (DuckDBConnection) DriverManager.getConnection("jdbc:duckdb:");
        FileChannel ch = FileChannel.open(arrow, StandardOpenOption.READ);
        ArrowFileReader reader = new ArrowFileReader(ch, allocator);
        ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator);
        Statement s = c.createStatement()) {
      Data.exportArrayStream(allocator, reader, stream);
      c.registerArrowStream("bad", stream);
      s.execute("COPY (SELECT * FROM bad) TO '" + parquet + "' (FORMAT parquet)");
    }
    TableDeclaration strings = TableDeclaration.newBuilder().setCatalog("c").setDbSchema("s")
        .setTable("strings").setObjectId(33).setSource(1)
        .addColumns(ColumnDeclaration.newBuilder().setName("k").setLogicalType("INT64"))
        .addColumns(ColumnDeclaration.newBuilder().setName("s").setLogicalType("UTF8"))
        .build();
    TableDeclaration fromArrow = strings.toBuilder().setTable("strings_ipc").setObjectId(34)
        .build();
    TablePlanner planner = new TablePlanner()
        .put("count where s = 'a'", new QueryPlan(List.of(new QueryPlan.Output("n", false,
            QueryPlan.OutputKind.COUNT_STAR, null, null)), new QueryPlan.Comparison("s",
                QueryPlan.Op.EQ, new QueryPlan.Literal(LogicalType.UTF8, "a")), null, true))
        .put("count", new QueryPlan(List.of(new QueryPlan.Output("n", false,
            QueryPlan.OutputKind.COUNT_STAR, null, null)), null, null, true));
    try (EmbeddedEngine engine = EmbeddedEngine.open(state, EngineOptions.defaults(),
        List.of(new Publication(strings, List.of(parquet), "parquet"),
            new Publication(fromArrow, List.of(arrow), "arrow")),
        List.of(fullRights()), planner)) {
      for (TableDeclaration t : List.of(strings, fromArrow)) {
        QueryStatus s = run(engine, t, "count where s = 'a'");
        assertEquals(QueryStatus.State.FAILED, s.getState(), t.getTable());
        assertEquals("query.evidence", s.getCode(), t.getTable() + ": " + s.getMessage());
        assertTrue(s.getMessage().contains("not valid UTF-8"), s.getMessage());
        // Statements that do not read the strings still answer.
        QueryStatus all = run(engine, t, "count");
        assertEquals(QueryStatus.State.SUCCEEDED, all.getState(), all.getMessage());
      }
      assertNoExecutionBuffers(engine);
    }
  }

  @Test
  void notNullableIsProvenByRepetitionOrStatisticsElseRefused() throws Exception {
    TableDeclaration kNotNull = TABLE;
    // k is OPTIONAL in DuckDB's files but every row group counts 0 nulls: accepted.
    try (EmbeddedEngine engine = open(List.of(new Publication(kNotNull,
        List.of(parquet("stats.parquet", 0, 10, 5)), "parquet")))) {
      assertEquals(QueryStatus.State.SUCCEEDED, run(engine, kNotNull, "k").getState());
      assertNoExecutionBuffers(engine);
    }
    // v declared not nullable holds nulls: refused naming the column and the file.
    Path withNulls = data.resolve("nulls.parquet");
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      s.execute("COPY (SELECT i::BIGINT AS k, CASE WHEN i = 3 THEN NULL ELSE i END::BIGINT AS v"
          + " FROM range(10) t(i)) TO '" + withNulls + "' (FORMAT parquet)");
    }
    TableDeclaration vNotNull = TABLE.toBuilder()
        .setColumns(1, TABLE.getColumns(1).toBuilder().setNullable(false)).build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> open(List.of(new Publication(vNotNull, List.of(withNulls), "parquet"))));
    assertTrue(e.getMessage().contains("column v") && e.getMessage().contains("1 nulls")
        && e.getMessage().contains("nulls.parquet"), e.getMessage());
  }

  @Test
  void convertedCopiesAreReusedAndRemovedWhenUnused() throws Exception {
    Path csv = data.resolve("t.csv");
    Files.writeString(csv, "k,v\n3,30\n1,\n2,20\n");
    Publication p = new Publication(TABLE, List.of(csv), "csv");
    Path converted = state.resolve("converted");
    try (EmbeddedEngine engine = open(List.of(p))) {
      assertEquals(List.of(3L, 1L, 2L), keys(engine, run(engine, TABLE, "k")));
      assertNoExecutionBuffers(engine);
    }
    List<Path> copies = list(converted);
    assertEquals(1, copies.size());
    FileTime written = Files.getLastModifiedTime(copies.get(0));
    try (EmbeddedEngine engine = open(List.of(p))) {
      assertEquals(copies, list(converted), "the copy is reused");
      assertEquals(written, Files.getLastModifiedTime(copies.get(0)));
      assertNoExecutionBuffers(engine);
    }
    // The source changes between runs (a new publication of other data): a new copy, the old
    // one removed.
    Files.writeString(csv, "k,v\n9,90\n");
    try (EmbeddedEngine engine = open(List.of(p))) {
      assertEquals(List.of(9L), keys(engine, run(engine, TABLE, "k")));
      List<Path> now = list(converted);
      assertEquals(1, now.size());
      assertFalse(now.equals(copies));
      assertNoExecutionBuffers(engine);
    }
    try (EmbeddedEngine engine = open(List.of())) {
      assertEquals(List.of(), list(converted), "no publication uses a copy any more");
      assertNoExecutionBuffers(engine);
    }
  }

  /** The keys {@code translated} selects, in the order DuckDB returns them. */
  private static List<Long> select(Connection c, PlanTranslator.Translated translated)
      throws Exception {
    List<Long> keys = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(translated.sql())) {
      translated.bind(ps);
      try (ResultSet r = ps.executeQuery()) {
        while (r.next()) {
          keys.add(r.getLong(1));
        }
      }
    }
    return keys;
  }

  /**
   * A projection's IN or NOT IN list long enough for DuckDB to join it comes back in file order:
   * ordered by the scan's file position, or, when a file column is named like that position, sent
   * as lists short enough to stay comparisons.
   */
  @Test
  void aLongInListKeepsFileOrderOrderedByPositionOrSplitWhenAColumnHidesIt() throws Exception {
    List<Path> files = threeFiles();
    // The same rows with a column that shadows DuckDB's file_index (names are case-blind).
    List<Path> shadowed = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      for (Path f : files) {
        Path g = data.resolve("shadowed-" + f.getFileName());
        s.execute("COPY (SELECT k, v, 0::BIGINT AS \"File_Index\" FROM read_parquet('" + f
            + "')) TO '" + g + "' (FORMAT parquet, ROW_GROUP_SIZE 2000)");
        shadowed.add(g);
      }
    }
    TableDeclaration withColumn = OTHER.toBuilder().addColumns(ColumnDeclaration.newBuilder()
        .setName("File_Index").setLogicalType("INT64")).build();
    // 200 literals spread over the keys (some name no row), in no order of the files'.
    List<Long> wanted = new ArrayList<>();
    for (long k = 0; k < 79_000; k += 395) {
      wanted.add(k % 2 == 0 ? k : 79_000 - k);
    }
    List<QueryPlan.Literal> literals = wanted.stream()
        .map(k -> new QueryPlan.Literal(LogicalType.INT64, k)).toList();
    List<Long> inFileOrder = threeFilesKeys().stream().filter(wanted::contains).toList();
    List<Long> othersInFileOrder =
        threeFilesKeys().stream().filter(k -> !wanted.contains(k)).toList();
    try (RootAllocator allocator = new RootAllocator();
        DuckTables tables = DuckTables.open(List.of(new Publication(TABLE, files, "parquet"),
            new Publication(withColumn, shadowed, "parquet")), DuckSettings.defaults(), state,
            allocator);
        Connection c = tables.connect()) {
      DuckTables.Scan plain = tables.scan(TABLE.getObjectId());
      DuckTables.Scan hidden = tables.scan(withColumn.getObjectId());
      assertTrue(plain.positions());
      assertFalse(hidden.positions());
      for (boolean negated : new boolean[] {false, true}) {
        QueryPlan plan = new QueryPlan(List.of(column("k", LogicalType.INT64, false)),
            new QueryPlan.InList("k", literals, negated), null, false);
        List<Long> expected = negated ? othersInFileOrder : inFileOrder;
        PlanTranslator.Translated ordered = PlanTranslator.translate(plan, plain);
        assertTrue(ordered.sql().endsWith(" ORDER BY file_index, file_row_number"), ordered.sql());
        assertEquals(expected, select(c, ordered));
        PlanTranslator.Translated split = PlanTranslator.translate(plan, hidden);
        assertFalse(split.sql().contains("ORDER BY"), split.sql());
        assertEquals(expected, select(c, split));
        assertTrue(split.sql().contains(negated ? " AND " : " OR "), split.sql());
      }
      // Why: DuckDB 1.4.4 joins such a list, even a NOT IN one beside an OR.
      for (String where : new String[] {"k IN (1, 2, 3, 4, 5, 6, 8)",
          "v IS NULL OR k NOT IN (1, 2, 3, 4, 5, 6, 8)"}) {
        try (Statement s = c.createStatement();
            ResultSet r = s.executeQuery("EXPLAIN SELECT k FROM " + plain.relation()
                + " WHERE " + where)) {
          assertTrue(r.next());
          assertTrue(r.getString(2).contains("MARK"), r.getString(2));
        }
      }
      assertEquals(0, allocator.getAllocatedMemory());
    }
  }

  @Test
  void theJoinOrderOptimizerIsOffAndScansStillAnswer() throws Exception {
    Path f = parquet("groups.parquet", 0, 40_000, 1_000);
    try (RootAllocator allocator = new RootAllocator();
        DuckTables tables = DuckTables.open(List.of(new Publication(TABLE, List.of(f), "parquet")),
            DuckSettings.defaults(), state, allocator);
        Connection c = tables.connect();
        Statement s = c.createStatement()) {
      ResultSet r = s.executeQuery("SELECT current_setting('disabled_optimizers')");
      assertTrue(r.next());
      assertEquals("join_order", r.getString(1).toLowerCase(java.util.Locale.ROOT));
      ResultSet count = s.executeQuery("SELECT COUNT(*), SUM(v) FROM "
          + tables.scan(TABLE.getObjectId()).relation());
      assertTrue(count.next());
      assertEquals(40_000, count.getLong(1));
      assertEquals(10L * 40_000 * 39_999 / 2, count.getLong(2));
      assertEquals(0, allocator.getAllocatedMemory());
    }
  }

  @Test
  void fileIdentityNoticesEachKindOfChange() throws Exception {
    Path f = parquet("id.parquet", 0, 100, 50);
    FileIdentity id = FileIdentity.of(f, "parquet");
    assertNull(id.change("parquet"));
    Path csv = data.resolve("x.csv");
    Files.write(csv, new byte[3 * FileIdentity.CSV_EDGE_BYTES]);
    FileIdentity csvId = FileIdentity.of(csv, "csv");
    FileTime t = Files.getLastModifiedTime(csv);
    try (RandomAccessFile raf = new RandomAccessFile(csv.toFile(), "rw")) {
      raf.seek(raf.length() - 1);
      raf.write(1);
    }
    Files.setLastModifiedTime(csv, t);
    assertEquals("footer", csvId.change("csv"), "the tail of a CSV file is digested");
    // A settled ctime (the identity taken as if a minute later) lets a check skip the digest,
    // but any write moves ctime, so the rewrite is still found by its footer.
    Path csv2 = data.resolve("y.csv");
    Files.write(csv2, new byte[3 * FileIdentity.CSV_EDGE_BYTES]);
    FileIdentity settled = FileIdentity.of(csv2, "csv",
        System.currentTimeMillis() * 1_000_000L + FileIdentity.SETTLED_NANOS * 60);
    assertTrue(settled.changedNanos() > 0, "this filesystem has a Unix ctime");
    assertNull(settled.change("csv"));
    FileTime t2 = Files.getLastModifiedTime(csv2);
    try (RandomAccessFile raf = new RandomAccessFile(csv2.toFile(), "rw")) {
      raf.seek(0);
      raf.write(7);
    }
    Files.setLastModifiedTime(csv2, t2);
    assertEquals("footer", settled.change("csv"), "the write moved ctime");
    assertEquals(-1, FileIdentity.of(csv2, "csv").changedNanos(),
        "a ctime this fresh is not trusted: every check digests");
    Files.writeString(data.resolve("not.parquet"), "no magic here");
    assertThrows(java.io.IOException.class,
        () -> FileIdentity.of(data.resolve("not.parquet"), "parquet"));
  }

  @Test
  void aFooterDeclaredLongerThanAnyRealOneIsRefusedWithoutReadingIt() throws Exception {
    // Sparse files whose trailers declare a footer of 2 GiB and of 4 GiB less 16 bytes: until
    // 2026-12-07 the digest read it into one heap buffer (the first ended the daemon with an
    // OutOfMemoryError, the second overflowed into IllegalArgumentException).
    for (long footer : new long[] {0x7FFF_FFF0L, 0xFFFF_FFF0L}) {
      Path hostile = data.resolve("hostile.parquet");
      try (RandomAccessFile raf = new RandomAccessFile(hostile.toFile(), "rw")) {
        raf.write(new byte[] {'P', 'A', 'R', '1'});
        raf.setLength(4 + footer + 8);
        raf.seek(4 + footer);
        raf.write(new byte[] {(byte) footer, (byte) (footer >> 8), (byte) (footer >> 16),
            (byte) (footer >> 24), 'P', 'A', 'R', '1'});
      }
      java.io.IOException e = assertThrows(java.io.IOException.class,
          () -> FileIdentity.of(hostile, "parquet"));
      assertTrue(e.getMessage().contains("declares a footer of " + footer), e.getMessage());
      Files.delete(hostile);
    }
  }

  private static List<Path> list(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }
}
