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
        } catch (RuntimeException e) {
          Files.deleteIfExists(temp);
          throw e;
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
    // "csv 3": CSV copies read since 2026-12-07 (header checked, "" an empty string, every field
    // checked to be its type's exact text) are not the copies of the same file read before, which
    // rounded and truncated, and must not be reused.
    StringBuilder key = new StringBuilder(p.format().equals("csv") ? "csv 3" : p.format())
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
      copyCsv(db, p.declaration(), source, to);
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
              + (header == null ? "an empty name" : shown(header)) + " there" + where);
        }
      }
    }
  }

  /** The marker of {@link #copyCsv}'s own refusal, inside DuckDB's error text. */
  private static final String NOT_ITS_TYPE = "transit: a CSV field is not a value of its type";

  /**
   * Converts the rows, each field read as text and taken only when it is the exact text of a value
   * of its declared type: DuckDB's casts round and truncate ({@code 1.5} as BIGINT is 2, a
   * timestamp as DATE its day), so a declared-type read would serve other values than the file's.
   * One pass: a field that is not its type's text raises DuckDB's {@code error()} inside the COPY;
   * only then a second pass finds the first such row, for the message. A quoted empty field
   * ({@code ""}) is an empty string, an unquoted one NULL, as PyArrow's CSV writer writes them
   * (DuckDB's default reads both as NULL).
   */
  private static void copyCsv(DuckDBConnection db, TableDeclaration d, Path source, String to)
      throws SQLException {
    List<ColumnDeclaration> declared = d.getColumnsList();
    List<String> checked = new ArrayList<>();
    for (int i = 0; i < declared.size(); i++) {
      checked.add("CASE WHEN r" + i + " IS NOT NULL AND t" + i + " IS NULL THEN error("
          + DuckTables.literal(NOT_ITS_TYPE) + ") ELSE t" + i + " END AS "
          + DuckTables.quote(declared.get(i).getName()));
    }
    try (Statement s = db.createStatement()) {
      s.execute("COPY (SELECT " + String.join(", ", checked) + " FROM "
          + parsedCsv(d, source, false) + ")" + to);
    } catch (SQLException e) {
      if (e.getMessage() == null || !e.getMessage().contains(NOT_ITS_TYPE)) {
        throw e;
      }
      throw firstMistypedField(db, d, source);
    }
  }

  /**
   * The CSV rows as {@code r<i>} (the field's text, NULL for an unquoted empty field) and {@code
   * t<i>} (its value in the declared type, NULL when the text is not exactly a value of the type);
   * {@code numbered} adds {@code n}, the row's number in file order from 1 after the header.
   */
  private static String parsedCsv(TableDeclaration d, Path source, boolean numbered) {
    List<ColumnDeclaration> declared = d.getColumnsList();
    List<String> raw = new ArrayList<>();
    List<String> parsed = new ArrayList<>();
    for (int i = 0; i < declared.size(); i++) {
      LogicalType t = DuckTables.logicalType(d, declared.get(i));
      if (t == LogicalType.CELL_INT64) {
        throw new IllegalArgumentException("publication " + d.getTable() + ": column "
            + declared.get(i).getName() + " is CELL_INT64, which CSV files cannot hold");
      }
      raw.add(DuckTables.literal("r" + i) + ": 'VARCHAR'");
      parsed.add("r" + i + ", " + exactValue("r" + i, t) + " AS t" + i);
    }
    return "(SELECT " + (numbered ? "n, " : "") + String.join(", ", parsed) + " FROM (SELECT "
        + (numbered ? "row_number() OVER () AS n, " : "") + "* FROM"
        + " read_csv(" + DuckTables.literal(source.toAbsolutePath().toString()) + ", "
        + CSV_OPTIONS + ", header = true, columns = {" + String.join(", ", raw) + "})))";
  }

  /**
   * {@code field}'s value as {@code type} when the text is exactly such a value, else NULL. A
   * DATE must read back as the same text (no time of day, no one-digit month, a real day); BOOL is
   * the word true or false in any case (PyArrow writes {@code true}, pandas {@code True}); FLOAT64
   * is whatever DuckDB parses as a double (a decimal rounds to the nearest double, as any reader's
   * would; {@code inf} and {@code nan} included).
   */
  private static String exactValue(String field, LogicalType type) {
    return switch (type) {
      case INT64 -> "CASE WHEN regexp_full_match(" + field + ", '-?[0-9]+') THEN TRY_CAST("
          + field + " AS BIGINT) END";
      case UINT64 -> "CASE WHEN regexp_full_match(" + field + ", '[0-9]+') THEN TRY_CAST("
          + field + " AS UBIGINT) END";
      case FLOAT64 -> "TRY_CAST(" + field + " AS DOUBLE)";
      case UTF8 -> field;
      case DATE -> "CASE WHEN regexp_full_match(" + field + ", '[0-9]{4}-[0-9]{2}-[0-9]{2}')"
          + " AND CAST(TRY_CAST(" + field + " AS DATE) AS VARCHAR) = " + field + " THEN CAST("
          + field + " AS DATE) END";
      case BOOL -> "CASE lower(" + field + ") WHEN 'true' THEN true WHEN 'false' THEN false END";
      case CELL_INT64 -> throw new IllegalStateException("CELL_INT64 in a CSV file");
    };
  }

  /**
   * After the conversion refused a field: the first row (counted from 1 after the header, in file
   * order) holding a field that is not its type's text, with its column and text.
   */
  private static IllegalArgumentException firstMistypedField(DuckDBConnection db,
      TableDeclaration d, Path source) throws SQLException {
    List<ColumnDeclaration> declared = d.getColumnsList();
    List<String> bad = new ArrayList<>();
    for (int i = 0; i < declared.size(); i++) {
      bad.add("(r" + i + " IS NOT NULL AND t" + i + " IS NULL)");
    }
    String where = " in " + source.getFileName();
    try (Statement s = db.createStatement();
        ResultSet r = s.executeQuery("SELECT * FROM "
            + parsedCsv(d, source, true) + " WHERE "
            + String.join(" OR ", bad) + " ORDER BY n LIMIT 1")) {
      if (!r.next()) {
        // Not expected: the same reader refused a field a moment ago.
        return new IllegalArgumentException("publication " + d.getTable()
            + ": a CSV field is not a value of its column's type" + where);
      }
      for (int i = 0; i < declared.size(); i++) {
        String text = r.getString("r" + i);
        if (text != null && r.getObject("t" + i) == null) {
          ColumnDeclaration c = declared.get(i);
          return new IllegalArgumentException("publication " + d.getTable() + ": column "
              + c.getName() + " is " + c.getLogicalType() + " but row " + r.getLong("n")
              + " of the CSV file holds \"" + shown(text) + "\", which is not exactly such a value"
              + where);
        }
      }
      throw new IllegalStateException("the refused CSV row names no column");
    }
  }

  /** A CSV file's text in a start failure's one line: at most 64 characters of it. */
  private static String shown(String text) {
    return text.length() > 64 ? text.substring(0, 64) + "..." : text;
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
