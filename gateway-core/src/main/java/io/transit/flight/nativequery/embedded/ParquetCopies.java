package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.duckdb.DuckDBConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parquet copies of the publications DuckDB cannot scan efficiently in place: a CSV file is parsed
 * and type-converted on every read, and DuckDB has no built-in Arrow IPC file reader. Each source
 * file is converted once, into {@code <sha256>.parquet} in the engine's {@code converted/}
 * directory, where the digest covers the source's {@link FileIdentity} and the declared columns;
 * a restart reuses the copy, and a copy no publication uses any more is removed at open.
 *
 * <p>Called only on the engine's opening thread, inside {@link DuckTables#open}.
 */
final class ParquetCopies {
  private static final Logger log = LoggerFactory.getLogger(ParquetCopies.class);

  private ParquetCopies() {}

  /**
   * The Parquet copies of a CSV or Arrow IPC publication's files, one per source file, written
   * when absent. A copy's name is the digest of the source's identity and the declared columns,
   * so a changed source or declaration never reuses an old copy.
   */
  static List<Path> of(DuckDBConnection db, Publication p,
      List<FileIdentity> identities, Path dir, BufferAllocator allocator)
      throws SQLException, IOException {
    PrivateFiles.directories(dir);
    List<Path> copies = new ArrayList<>();
    for (FileIdentity id : identities) {
      Path copy = dir.resolve(copyKey(p, id) + ".parquet");
      if (!Files.exists(copy)) {
        Path temp = dir.resolve(copy.getFileName() + ".tmp");
        Files.deleteIfExists(temp);
        long started = System.nanoTime();
        try {
          writeCopy(db, p, id.path(), temp, allocator);
        } catch (SQLException e) {
          Files.deleteIfExists(temp);
          throw new SQLException("publication " + p.declaration().getTable() + ": converting "
              + id.path() + " failed: " + e.getMessage(), e);
        }
        PrivateFiles.restrict(temp);
        try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
          ch.force(true);
        }
        Files.move(temp, copy, StandardCopyOption.ATOMIC_MOVE);
        log.info("publication {}: converted {} to a Parquet copy in {} ms",
            p.declaration().getTable(), id.path().getFileName(),
            (System.nanoTime() - started) / 1_000_000);
      }
      copies.add(copy);
    }
    return copies;
  }

  private static String copyKey(Publication p, FileIdentity id) {
    MessageDigest md = Digests.sha256();
    // "csv 2": CSV copies read since 2026-12-07 (header checked, "" an empty string) are not the
    // copies of the same file read before, which must not be reused.
    StringBuilder key = new StringBuilder(p.format().equals("csv") ? "csv 2" : p.format())
        .append('\n')
        .append(id.path().toAbsolutePath()).append('\n')
        .append(id.size()).append('\n').append(id.modifiedNanos()).append('\n')
        .append(id.digestHex()).append('\n');
    for (ColumnDeclaration c : p.declaration().getColumnsList()) {
      key.append(c.getName()).append(':').append(c.getLogicalType()).append('\n');
    }
    md.update(key.toString().getBytes(StandardCharsets.UTF_8));
    return HexFormat.of().formatHex(md.digest());
  }

  private static void writeCopy(DuckDBConnection db, Publication p, Path source, Path target,
      BufferAllocator allocator) throws SQLException, IOException {
    String to = " TO " + DuckTables.literal(target.toAbsolutePath().toString())
        + " (FORMAT parquet)";
    if (p.format().equals("csv")) {
      checkCsvHeader(db, p.declaration(), source);
      // A quoted empty field ("") is an empty string, an unquoted one NULL, as PyArrow's CSV
      // writer writes them (DuckDB's default reads both as NULL).
      try (Statement s = db.createStatement()) {
        s.execute("COPY (SELECT * FROM read_csv("
            + DuckTables.literal(source.toAbsolutePath().toString()) + ", " + CSV_OPTIONS
            + ", header = true, columns = " + csvColumns(p.declaration()) + "))" + to);
      }
      return;
    }
    String view = "arrow_import";
    try (FileChannel ch = FileChannel.open(source, StandardOpenOption.READ);
        ArrowFileReader reader = new ArrowFileReader(ch, allocator);
        ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator);
        Statement s = db.createStatement()) {
      // The stream takes over the reader's batches; DuckDB consumes it during the COPY.
      Data.exportArrayStream(allocator, reader, stream);
      db.registerArrowStream(view, stream);
      s.execute("COPY (SELECT * FROM " + view + ")" + to);
    }
  }

  private static final String CSV_OPTIONS = "auto_detect = false, allow_quoted_nulls = false";

  /**
   * The header line must name the declared columns in declared order: {@code read_csv} with
   * declared {@code columns} takes them by position and ignores the header's names, so a file
   * whose columns come in another order would otherwise be served with its values swapped (the
   * copy carries the declared names, so {@link FileSchemaCheck} cannot see it). The header is
   * read by the same reader, with the same options, as the copy's rows.
   */
  private static void checkCsvHeader(DuckDBConnection db, TableDeclaration d, Path source)
      throws SQLException {
    List<ColumnDeclaration> declared = d.getColumnsList();
    List<String> raw = new ArrayList<>();
    for (int i = 0; i < declared.size(); i++) {
      raw.add(DuckTables.literal("h" + i) + ": 'VARCHAR'");
    }
    String where = " in " + source.getFileName();
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("SELECT * FROM read_csv("
            + DuckTables.literal(source.toAbsolutePath().toString()) + ", " + CSV_OPTIONS
            + ", header = false, columns = {" + String.join(", ", raw) + "}) LIMIT 1")) {
      if (!r.next()) {
        throw new IllegalArgumentException("publication " + d.getTable()
            + ": the CSV file has no header line" + where);
      }
      for (int i = 0; i < declared.size(); i++) {
        String name = declared.get(i).getName();
        String header = r.getString(i + 1);
        if (!name.equals(header)) {
          throw new IllegalArgumentException("publication " + d.getTable() + ": column " + name
              + " is declared at position " + (i + 1) + " but the CSV header has "
              + (header == null ? "an empty name" : header) + " there" + where);
        }
      }
    }
  }

  private static String csvColumns(TableDeclaration d) {
    List<String> cols = new ArrayList<>();
    for (ColumnDeclaration c : d.getColumnsList()) {
      LogicalType t = DuckTables.logicalType(d, c);
      if (t == LogicalType.CELL_INT64) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + c.getName() + " is CELL_INT64, which CSV files cannot hold");
      }
      cols.add(DuckTables.literal(c.getName()) + ": " + DuckTables.literal(DuckTables.duckType(t)));
    }
    return "{" + String.join(", ", cols) + "}";
  }

  /** Copies no publication uses any more (its source or declaration changed) are removed. */
  static void removeUnused(Path dir, Set<Path> inUse) throws IOException {
    if (!Files.isDirectory(dir)) {
      return;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path f : files) {
        if (!inUse.contains(f)) {
          Files.deleteIfExists(f);
        }
      }
    }
  }
}
