package io.transit.flight.nativequery.embedded;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;

/**
 * Generates the demo Tables that make a first run useful without user data: deterministic
 * Parquet files written by DuckDB's COPY, and their publications. {@code demo_primitive} fits the
 * primitive (all-int64) profile; {@code demo_mixed} has non-int64 columns that can only be
 * filtered on or counted; {@code demo_cells} is a small fixture of nested cells, an unsigned value
 * above int64 maximum and int64 values whose SUM overflows.
 *
 * <p>Called once, on the server's starting thread; stateless.
 */
public final class DemoData {
  public static final String PRIMITIVE = "demo_primitive";
  public static final String MIXED = "demo_mixed";
  public static final String CELLS = "demo_cells";
  public static final long PRIMITIVE_ROWS = 1_000_000;
  public static final long MIXED_ROWS = 10_000;
  /** Default declaration identity; the server usually republishes under its own catalog/ids. */
  public static final String CATALOG = "transit";
  public static final String SCHEMA = "demo";
  public static final String OWNER = "transit-demo";
  public static final long SOURCE = 1;

  private static final Map<String, List<ColumnDeclaration>> COLUMNS = Map.of(
      PRIMITIVE, List.of(col("id", "INT64", false), col("a", "INT64", false),
          col("b", "INT64", true), col("c", "INT64", false), col("d", "INT64", true)),
      MIXED, List.of(col("id", "INT64", false), col("region", "UTF8", true),
          col("price", "FLOAT64", true), col("flag", "BOOL", true), col("day", "DATE", true),
          col("qty", "INT64", true)),
      CELLS, List.of(col("id", "INT64", false), col("ok", "CELL_INT64", true),
          col("bad", "CELL_INT64", false), col("big", "UINT64", false),
          col("huge", "INT64", false)));

  private static final Map<String, String> QUERIES = Map.of(
      PRIMITIVE, "SELECT i::BIGINT AS id, (i * 3 - 500000)::BIGINT AS a,"
          + " CASE WHEN i % 10 = 0 THEN NULL ELSE (i % 1000)::BIGINT END AS b,"
          + " (i % 7 - 3)::BIGINT AS c, CASE WHEN i % 4 = 0 THEN NULL ELSE (-i)::BIGINT END AS d"
          + " FROM range(" + PRIMITIVE_ROWS + ") t(i) ORDER BY i",
      MIXED, "SELECT i::BIGINT AS id,"
          + " CASE WHEN i % 50 = 0 THEN NULL ELSE ['north', 'south', 'east', 'west'][i % 4 + 1]"
          + " END AS region,"
          + " CASE WHEN i % 40 = 0 THEN NULL ELSE (i % 1000) / 4.0 END::DOUBLE AS price,"
          + " CASE WHEN i % 30 = 0 THEN NULL ELSE i % 3 = 0 END AS flag,"
          + " CASE WHEN i % 60 = 0 THEN NULL ELSE DATE '2024-01-01' + (i % 366)::INTEGER END"
          + " AS day,"
          + " CASE WHEN i % 25 = 0 THEN NULL ELSE (i % 97)::BIGINT END AS qty"
          + " FROM range(" + MIXED_ROWS + ") t(i) ORDER BY i",
      CELLS, "SELECT * FROM (VALUES"
          + " (0::BIGINT, {'state': 1::UTINYINT, 'value': 10::BIGINT},"
          + "  {'state': 1::UTINYINT, 'value': 1::BIGINT}, 1::UBIGINT,"
          + "  9223372036854775000::BIGINT),"
          + " (1, {'state': 3::UTINYINT, 'value': 0::BIGINT},"
          + "  {'state': 4::UTINYINT, 'value': 0::BIGINT}, 18446744073709551615::UBIGINT,"
          + "  9223372036854775000::BIGINT),"
          + " (2, {'state': 1::UTINYINT, 'value': -5::BIGINT},"
          + "  {'state': 5::UTINYINT, 'value': 0::BIGINT}, 9223372036854775807::UBIGINT,"
          + "  1000::BIGINT),"
          + " (3, {'state': 1::UTINYINT, 'value': 9223372036854775807::BIGINT},"
          + "  {'state': 6::UTINYINT, 'value': 0::BIGINT}, 0::UBIGINT, 7::BIGINT)"
          + ") v(id, ok, bad, big, huge) ORDER BY id");

  private DemoData() {}

  /** The declared columns of a demo Table ({@link #PRIMITIVE}, {@link #MIXED}, {@link #CELLS}). */
  public static List<ColumnDeclaration> columns(String table) {
    List<ColumnDeclaration> c = COLUMNS.get(table);
    if (c == null) {
      throw new IllegalArgumentException("demo table: " + table + " (expected: one of "
          + COLUMNS.keySet() + ")");
    }
    return c;
  }

  /** The default declaration of a demo Table with the given object id. */
  public static TableDeclaration declaration(String table, long objectId) {
    return TableDeclaration.newBuilder()
        .setCatalog(CATALOG)
        .setDbSchema(SCHEMA)
        .setTable(table)
        .setOwner(OWNER)
        .setObjectId(objectId)
        .setMetadataRef("demo:" + table + ":v1")
        .addAllColumns(columns(table))
        .setSource(SOURCE)
        .build();
  }

  /**
   * Writes {@code <table>.parquet} for the three demo Tables into {@code dir} (replacing old
   * files) and returns their publications, object ids 1, 2, 3 in the order primitive, mixed,
   * cells.
   */
  public static List<Publication> generate(Path dir) throws IOException, SQLException {
    Files.createDirectories(dir);
    List<String> names = List.of(PRIMITIVE, MIXED, CELLS);
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      for (String name : names) {
        Path file = dir.resolve(name + ".parquet");
        Path temp = dir.resolve(name + ".parquet.tmp");
        s.execute("COPY (" + QUERIES.get(name) + ") TO '"
            + temp.toAbsolutePath().toString().replace("'", "''") + "' (FORMAT parquet)");
        Files.move(temp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
            java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      }
    }
    return List.of(
        new Publication(declaration(PRIMITIVE, 1), List.of(dir.resolve(PRIMITIVE + ".parquet")),
            "parquet"),
        new Publication(declaration(MIXED, 2), List.of(dir.resolve(MIXED + ".parquet")),
            "parquet"),
        new Publication(declaration(CELLS, 3), List.of(dir.resolve(CELLS + ".parquet")),
            "parquet"));
  }

  private static ColumnDeclaration col(String name, String type, boolean nullable) {
    return ColumnDeclaration.newBuilder()
        .setName(name)
        .setLogicalType(type)
        .setNullable(nullable)
        .build();
  }
}
