package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.duckdb.DuckDBConnection;

/**
 * The published Tables, scanned in place: each Table is a {@code read_parquet} scan of its
 * Parquet files ({@link #scan}), so opening reads only file footers, whatever the data's size, and
 * a query holds only what DuckDB's memory limit allows. A statement names the scan itself rather
 * than a view over it: DuckDB binds a Parquet scan again at every execution of a prepared
 * statement, and a view adds its own expansion to each of those binds. Parquet publications are
 * scanned where they lie; CSV and Arrow IPC files are scanned through their {@link
 * ParquetCopies}. Every scanned file is checked against its declaration from metadata alone
 * ({@link FileSchemaCheck}).
 *
 * <p>Each source file's {@link FileIdentity} is recorded at open, and {@link #checkUnchanged}
 * compares the files with it before and after every execution: a published file that changed
 * fails the statement instead of answering over different data. Rows come back in file order,
 * then row-group order ({@code preserve_insertion_order}), so re-running a plan after a restart
 * writes the same segments.
 *
 * <p>Opened and closed on the engine's opening/closing thread; {@link #connect()}, {@link
 * #publication(long)} and {@link #checkUnchanged(long)} may be called from any thread (upload
 * validation, query runners): the scans and identities are immutable after open.
 */
final class DuckTables implements AutoCloseable {
  /** The longest file name a failure message carries; the fact has it whole. */
  private static final int MAX_NAME_IN_MESSAGE = 64;

  /**
   * A publication as served: its declaration and files, what the files were at open, and the
   * DuckDB relation that scans them.
   */
  private record Served(Publication publication, List<FileIdentity> identities, Scan scan) {}

  /**
   * A Table's DuckDB relation, to follow {@code FROM}, and whether DuckDB's virtual columns
   * {@code file_index} and {@code file_row_number} reach it: a file column of either name (in any
   * case) would take the name instead, so ordering by them would order by the Table's data.
   */
  record Scan(String relation, boolean positions) {
    /** The virtual columns that put a scan's rows in file order, then row order. */
    static final String FILE_ORDER = "file_index, file_row_number";
  }

  private final DuckDBConnection database;
  private final Map<Long, Served> byObjectId;

  private DuckTables(DuckDBConnection database, Map<Long, Served> byObjectId) {
    this.database = database;
    this.byObjectId = Map.copyOf(byObjectId);
  }

  /**
   * Opens DuckDB with {@code settings} and publishes every Table as a scan of its files.
   *
   * @param stateDir the engine's state directory: DuckDB's default spill directory and the
   *     converted copies live under it
   * @param allocator only serves reading Arrow IPC files for their conversion; not kept
   * @throws IllegalArgumentException a declaration does not match its files
   * @throws SQLException DuckDB refused a setting or a file could not be read
   */
  static DuckTables open(List<Publication> publications, DuckSettings settings, Path stateDir,
      BufferAllocator allocator) throws SQLException, IOException {
    DuckDBConnection db = (DuckDBConnection) DriverManager.getConnection("jdbc:duckdb:");
    try {
      settings.apply(db, stateDir);
      Path converted = stateDir.resolve("converted");
      Set<Path> copiesInUse = new HashSet<>();
      Map<Long, Served> byId = new HashMap<>();
      for (Publication p : publications) {
        TableDeclaration d = p.declaration();
        if (byId.containsKey(d.getObjectId())) {
          throw new IllegalArgumentException("publication " + d.getTable() + ": object id "
              + Long.toUnsignedString(d.getObjectId()) + " is published twice");
        }
        List<FileIdentity> identities = identities(p);
        List<Path> scanned = p.format().equals("parquet") ? p.files()
            : ParquetCopies.of(db, p, identities, converted, allocator);
        copiesInUse.addAll(p.format().equals("parquet") ? List.of() : scanned);
        for (Path f : scanned) {
          FileSchemaCheck.check(db, p, f);
        }
        // One file is named as a string, not a one-element list: a little less to bind each time.
        String scan = "read_parquet(" + (scanned.size() == 1
            ? literal(scanned.get(0).toAbsolutePath().toString()) : fileList(scanned)) + ")";
        boolean positions = true;
        try (Statement s = db.createStatement();
            // Binds the files together once now, so files that cannot be scanned as one Table
            // fail the open rather than the first statement.
            ResultSet columns = s.executeQuery("DESCRIBE SELECT * FROM " + scan)) {
          while (columns.next()) {
            String name = columns.getString("column_name");
            positions &= !name.equalsIgnoreCase("file_index")
                && !name.equalsIgnoreCase("file_row_number");
          }
        }
        byId.put(d.getObjectId(), new Served(p, identities, new Scan(scan, positions)));
      }
      ParquetCopies.removeUnused(converted, copiesInUse);
      return new DuckTables(db, byId);
    } catch (SQLException | IOException | RuntimeException e) {
      db.close();
      throw e;
    }
  }

  /**
   * The DuckDB relation over object {@code objectId}'s rows: a scan of its files, whose paths are
   * SQL literals.
   *
   * @throws IllegalArgumentException the object is not published here
   */
  Scan scan(long objectId) {
    Served s = byObjectId.get(objectId);
    if (s == null) {
      throw new IllegalArgumentException(
          "object " + Long.toUnsignedString(objectId) + " is not published");
    }
    return s.scan();
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
    return Optional.ofNullable(byObjectId.get(objectId)).map(Served::publication);
  }

  /**
   * Fails when a file of object {@code objectId}'s publication is no longer what it was at open
   * (missing, another size, another modification time or another footer): FAILED_PRECONDITION
   * {@code query.source_changed}, naming the file. An unknown object id passes (upload validation
   * refuses it).
   *
   * @throws SegmentStore.Unavailable ({@code open_files}) the process is out of file descriptors:
   *     nothing is known about the files, and the query runs again later as after a store outage
   */
  void checkUnchanged(long objectId) throws SegmentStore.Unavailable {
    Served s = byObjectId.get(objectId);
    if (s == null) {
      return;
    }
    for (FileIdentity id : s.identities()) {
      String change;
      try {
        change = id.change(s.publication().format());
      } catch (IOException e) {
        throw new SegmentStore.Unavailable("open_files", e);
      }
      if (change != null) {
        String name = id.path().getFileName().toString();
        String shown = name.length() <= MAX_NAME_IN_MESSAGE ? name
            : name.substring(0, MAX_NAME_IN_MESSAGE) + "…";
        GatewayException changed = QueryCode.SOURCE_CHANGED.failure("published file " + shown
                + " of " + s.publication().declaration().getTable()
                + " changed since the engine opened (" + change + ")")
            .with("file", name)
            .with("change", change);
        // A name cut here is a message cut where it was made (diagnostic-v1.md).
        throw name.equals(shown) ? changed : changed.withMessageCut();
      }
    }
  }

  /** A new connection to the shared database; the caller closes it. */
  Connection connect() throws SQLException {
    return database.duplicate();
  }

  private static List<FileIdentity> identities(Publication p) throws IOException {
    List<FileIdentity> ids = new ArrayList<>();
    for (Path f : p.files()) {
      try {
        ids.add(FileIdentity.of(f, p.format()));
      } catch (IOException e) {
        throw new IOException("publication " + p.declaration().getTable() + ": cannot read "
            + f + ": " + e.getMessage(), e);
      }
    }
    return ids;
  }

  static LogicalType logicalType(TableDeclaration d, ColumnDeclaration c) {
    try {
      return LogicalType.valueOf(c.getLogicalType());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("publication " + d.getTable() + ": column "
          + c.getName() + " has unknown logical type " + c.getLogicalType());
    }
  }

  static String fileList(List<Path> files) {
    List<String> quoted = new ArrayList<>();
    for (Path f : files) {
      quoted.add(literal(f.toAbsolutePath().toString()));
    }
    return "[" + String.join(", ", quoted) + "]";
  }

  static String literal(String text) {
    return "'" + text.replace("'", "''") + "'";
  }

  @Override
  public void close() throws SQLException {
    database.close();
  }
}
