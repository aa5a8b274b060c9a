package io.transit.flight.nativequery.embedded;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.duckdb.DuckDBConnection;

/**
 * The published Tables, loaded once at open into an in-memory DuckDB database and immutable
 * afterwards (so re-executing a plan gives the same rows). Each Table becomes a DuckDB table named
 * after its object id; its declared columns are checked against what was loaded, and a mismatch is
 * a startup error naming the publication and the column.
 *
 * <p>Opened and closed on the engine's opening/closing thread; {@link #connect()} and
 * {@link #publication(long)} may be called from any thread (query runners, senders).
 */
final class DuckTables implements AutoCloseable {
  private final DuckDBConnection database;
  private final Map<Long, Publication> byObjectId;

  private DuckTables(DuckDBConnection database, Map<Long, Publication> byObjectId) {
    this.database = database;
    this.byObjectId = Map.copyOf(byObjectId);
  }

  /** Loads every publication; the allocator only serves the Arrow IPC import and is not kept. */
  static DuckTables load(List<Publication> publications, BufferAllocator allocator)
      throws SQLException {
    DuckDBConnection db = (DuckDBConnection) DriverManager.getConnection("jdbc:duckdb:");
    try {
      Map<Long, Publication> byId = new HashMap<>();
      for (Publication p : publications) {
        TableDeclaration d = p.declaration();
        if (byId.put(d.getObjectId(), p) != null) {
          throw new IllegalArgumentException("publication " + d.getTable() + ": object id "
              + Long.toUnsignedString(d.getObjectId()) + " is published twice");
        }
        loadOne(db, p, allocator);
        checkColumns(db, p);
      }
      return new DuckTables(db, byId);
    } catch (SQLException | RuntimeException e) {
      db.close();
      throw e;
    }
  }

  /** The DuckDB table holding object {@code objectId}'s rows. */
  static String tableName(long objectId) {
    return "pub_" + Long.toUnsignedString(objectId);
  }

  static String duckType(LogicalType type) {
    return switch (type) {
      case INT64 -> "BIGINT";
      case UINT64 -> "UBIGINT";
      case CELL_INT64 -> "STRUCT(state UTINYINT, \"value\" BIGINT)";
      case FLOAT64 -> "DOUBLE";
      case UTF8 -> "VARCHAR";
      case BOOL -> "BOOLEAN";
      case DATE -> "DATE";
    };
  }

  static String quote(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  Optional<Publication> publication(long objectId) {
    return Optional.ofNullable(byObjectId.get(objectId));
  }

  /** A new connection to the shared database; the caller closes it. */
  Connection connect() throws SQLException {
    return database.duplicate();
  }

  private static void loadOne(DuckDBConnection db, Publication p, BufferAllocator allocator)
      throws SQLException {
    TableDeclaration d = p.declaration();
    String table = quote(tableName(d.getObjectId()));
    List<String> files = new ArrayList<>();
    for (Path f : p.files()) {
      files.add(literal(f.toAbsolutePath().toString()));
    }
    String list = "[" + String.join(", ", files) + "]";
    try (Statement s = db.createStatement()) {
      switch (p.format()) {
        case "parquet" -> s.execute(
            "CREATE TABLE " + table + " AS SELECT * FROM read_parquet(" + list + ")");
        case "csv" -> s.execute("CREATE TABLE " + table + " AS SELECT * FROM read_csv(" + list
            + ", header = true, auto_detect = false, columns = " + csvColumns(d) + ")");
        case "arrow" -> loadArrow(db, p, table, allocator);
        default -> throw new IllegalArgumentException("format " + p.format());
      }
    } catch (SQLException e) {
      throw new SQLException("publication " + d.getTable() + ": loading " + p.format()
          + " files failed: " + e.getMessage(), e);
    }
  }

  private static String csvColumns(TableDeclaration d) {
    List<String> cols = new ArrayList<>();
    for (ColumnDeclaration c : d.getColumnsList()) {
      LogicalType t = logicalType(d, c);
      if (t == LogicalType.CELL_INT64) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is CELL_INT64, which CSV files cannot hold");
      }
      cols.add(literal(c.getName()) + ": " + literal(duckType(t)));
    }
    return "{" + String.join(", ", cols) + "}";
  }

  private static void loadArrow(
      DuckDBConnection db, Publication p, String table, BufferAllocator allocator)
      throws SQLException {
    for (int i = 0; i < p.files().size(); i++) {
      String view = "arrow_import_" + i;
      try (FileChannel ch = FileChannel.open(p.files().get(i), StandardOpenOption.READ);
          ArrowFileReader reader = new ArrowFileReader(ch, allocator);
          ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator);
          Statement s = db.createStatement()) {
        // The stream takes over the reader's batches; DuckDB consumes it during the statement.
        Data.exportArrayStream(allocator, reader, stream);
        db.registerArrowStream(view, stream);
        s.execute(i == 0
            ? "CREATE TABLE " + table + " AS SELECT * FROM " + view
            : "INSERT INTO " + table + " SELECT * FROM " + view);
      } catch (IOException e) {
        throw new SQLException("publication " + p.declaration().getTable() + ": cannot read "
            + p.files().get(i) + ": " + e.getMessage(), e);
      }
    }
  }

  private static void checkColumns(DuckDBConnection db, Publication p) throws SQLException {
    TableDeclaration d = p.declaration();
    String name = tableName(d.getObjectId());
    List<String[]> loaded = new ArrayList<>();
    try (PreparedStatement s = db.prepareStatement("SELECT column_name, data_type FROM"
        + " information_schema.columns WHERE table_name = ? ORDER BY ordinal_position")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          loaded.add(new String[] {r.getString(1), r.getString(2)});
        }
      }
    }
    List<ColumnDeclaration> declared = d.getColumnsList();
    for (int i = 0; i < declared.size(); i++) {
      ColumnDeclaration c = declared.get(i);
      String expected = duckType(logicalType(d, c));
      if (i >= loaded.size() || !loaded.get(i)[0].equals(c.getName())) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is declared at position " + (i + 1) + " but the data has "
            + (i < loaded.size() ? loaded.get(i)[0] : "no column") + " there");
      }
      if (!normalize(loaded.get(i)[1]).equals(normalize(expected))) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is declared " + c.getLogicalType() + " (" + expected
            + ") but the data has " + loaded.get(i)[1]);
      }
      if (!c.getNullable()) {
        checkNoNulls(db, d, name, c.getName());
      }
    }
    if (loaded.size() != declared.size()) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": the data has "
          + loaded.size() + " columns (expected: " + declared.size() + " declared)");
    }
  }

  private static void checkNoNulls(DuckDBConnection db, TableDeclaration d, String table,
      String column) throws SQLException {
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("SELECT count(*) FROM " + quote(table) + " WHERE "
            + quote(column) + " IS NULL")) {
      r.next();
      if (r.getLong(1) != 0) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column " + column
            + " is declared not nullable but holds " + r.getLong(1) + " nulls");
      }
    }
  }

  static LogicalType logicalType(TableDeclaration d, ColumnDeclaration c) {
    try {
      return LogicalType.valueOf(c.getLogicalType());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": column "
          + c.getName() + " has unknown logical type " + c.getLogicalType());
    }
  }

  private static String normalize(String duckType) {
    return duckType.replace("\"", "").replaceAll("\\s+", "").toUpperCase(Locale.ROOT);
  }

  private static String literal(String text) {
    return "'" + text.replace("'", "''") + "'";
  }

  @Override
  public void close() throws SQLException {
    database.close();
  }
}
