package io.transit.flight.nativequery.embedded;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.duckdb.DuckDBConnection;

/**
 * Checks a Parquet file against its publication's declaration from the file's metadata alone —
 * the footer DuckDB reads for {@code DESCRIBE}, {@code parquet_schema} and
 * {@code parquet_metadata} — never its data pages, so the check costs the same for any size:
 * column names and positions, types, and for a column declared not nullable either a
 * {@code REQUIRED} repetition or row-group statistics counting no nulls. A mismatch is an
 * {@link IllegalArgumentException} naming the publication, the column and the file.
 *
 * <p>Called only on the engine's opening thread, inside {@link DuckTables#open}.
 */
final class FileSchemaCheck {
  private FileSchemaCheck() {}

  /** Names, positions and types from the file's schema; nullability from its metadata. */
  static void check(DuckDBConnection db, Publication p, Path file)
      throws SQLException {
    TableDeclaration d = p.declaration();
    String read = "read_parquet(" + DuckTables.fileList(List.of(file)) + ")";
    List<String[]> found = new ArrayList<>();
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("DESCRIBE SELECT * FROM " + read)) {
      while (r.next()) {
        found.add(new String[] {r.getString(1), r.getString(2)});
      }
    }
    String where = " in " + file.getFileName();
    List<ColumnDeclaration> declared = d.getColumnsList();
    for (int i = 0; i < declared.size(); i++) {
      ColumnDeclaration c = declared.get(i);
      String expected = DuckTables.duckType(DuckTables.logicalType(d, c));
      if (i >= found.size() || !found.get(i)[0].equals(c.getName())) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is declared at position " + (i + 1) + " but the data has "
            + (i < found.size() ? found.get(i)[0] : "no column") + " there" + where);
      }
      if (!normalize(found.get(i)[1]).equals(normalize(expected))) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is declared " + c.getLogicalType() + " (" + expected
            + ") but the data has " + found.get(i)[1] + where);
      }
    }
    if (found.size() != declared.size()) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": the data has "
          + found.size() + " columns (expected: " + declared.size() + " declared)" + where);
    }
    Map<String, String> repetition = topLevelRepetition(db, file);
    for (ColumnDeclaration c : declared) {
      if (!c.getNullable() && !"REQUIRED".equals(repetition.get(c.getName()))) {
        checkNoNulls(db, d, file, c.getName());
      }
    }
  }

  /** Each top-level field's Parquet repetition ({@code REQUIRED}, {@code OPTIONAL}, ...). */
  private static Map<String, String> topLevelRepetition(DuckDBConnection db, Path file)
      throws SQLException {
    List<String[]> elements = new ArrayList<>();
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("SELECT name, repetition_type, coalesce(num_children, 0)"
            + " FROM parquet_schema(" + DuckTables.fileList(List.of(file)) + ")")) {
      while (r.next()) {
        elements.add(new String[] {r.getString(1), r.getString(2), r.getString(3)});
      }
    }
    // The schema is the tree flattened depth-first: the root, then each field and its children.
    Map<String, String> top = new HashMap<>();
    int next = 1;
    int fields = elements.isEmpty() ? 0 : Integer.parseInt(elements.get(0)[2]);
    for (int i = 0; i < fields && next < elements.size(); i++) {
      top.put(elements.get(next)[0], elements.get(next)[1]);
      next = skipSubtree(elements, next);
    }
    return top;
  }

  private static int skipSubtree(List<String[]> elements, int at) {
    int children = Integer.parseInt(elements.get(at)[2]);
    int next = at + 1;
    for (int i = 0; i < children && next < elements.size(); i++) {
      next = skipSubtree(elements, next);
    }
    return next;
  }

  /**
   * A column declared not nullable but stored OPTIONAL must be proven null-free by its row-group
   * statistics: in every row group, some leaf of the column counts no nulls (a struct is null
   * only where all its leaves are). Without statistics nothing is proven, and the declaration is
   * refused rather than trusted.
   */
  private static void checkNoNulls(DuckDBConnection db, TableDeclaration d, Path file,
      String column) throws SQLException {
    Map<Long, Long> fewestNullsPerGroup = new HashMap<>();
    boolean unknown = false;
    try (PreparedStatement s = db.prepareStatement("SELECT row_group_id, stats_null_count"
        + " FROM parquet_metadata(" + DuckTables.fileList(List.of(file)) + ")"
        + " WHERE path_in_schema = ? OR starts_with(path_in_schema, ?)")) {
      s.setString(1, column);
      s.setString(2, column + ", ");
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          long group = r.getLong(1);
          long nulls = r.getLong(2);
          if (r.wasNull()) {
            unknown = true;
            continue;
          }
          fewestNullsPerGroup.merge(group, nulls, Math::min);
        }
      }
    }
    long nulls = fewestNullsPerGroup.values().stream().mapToLong(Long::longValue).sum();
    if (nulls != 0) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": column " + column
          + " is declared not nullable but holds " + nulls + " nulls in " + file.getFileName());
    }
    if (unknown) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": column " + column
          + " is declared not nullable but " + file.getFileName()
          + " stores it OPTIONAL without null counts, so nothing proves it has no nulls");
    }
  }

  private static String normalize(String duckType) {
    return duckType.replace("\"", "").replaceAll("\\s+", "").toUpperCase(Locale.ROOT);
  }
}
