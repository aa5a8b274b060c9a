package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The journal file's layout. A new journal is created with {@link SqliteJournal#PAGE_BYTES} pages
 * and keys its small-row tables by their primary key alone; a journal written before either
 * (SQLite's default 4 KiB pages, rowid tables with a separate key index) keeps its layout and
 * goes on recording: both are properties of the file, and the journal's statements read and
 * write either alike, so nothing is migrated.
 */
class SqliteJournalLayoutTest {
  @TempDir Path dir;

  private static int pageSize(Path file) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("PRAGMA page_size")) {
      r.next();
      return r.getInt(1);
    }
  }

  /** The automatic indexes SQLite keeps for the keys of rowid tables with another key. */
  private static List<String> keyIndexes(Path file) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT tbl_name FROM sqlite_master WHERE type = 'index'"
            + " AND name LIKE 'sqlite_autoindex%' ORDER BY tbl_name")) {
      while (r.next()) {
        out.add(r.getString(1));
      }
    }
    return out;
  }

  /** A statement's rows in each keyed table, read back through the journal. */
  private static void recordAndReadAStatementsRows(SqliteJournal journal) throws Exception {
    journal.transaction(() -> {
      journal.recordCommand(7, 1, 1, bytes("sha"), bytes("outcome"));
      journal.beginUpload(7, 3, 10, 1, bytes("bundle"), 0);
      journal.addPart(7, 3, 0, bytes("0123456789"));
      journal.setUploadState(7, 3, JournalStore.UploadState.SEALED);
      long correlation = journal.allocateCorrelation();
      journal.insertAccepted(correlation, 7, 3, bytes("bundle"));
      return null;
    });
    assertArrayEquals(bytes("outcome"),
        journal.transaction(() -> journal.command(7, 1)).orElseThrow().outcome());
    JournalStore.Upload u = journal.transaction(() -> journal.upload(7, 3)).orElseThrow();
    assertEquals(JournalStore.UploadState.SEALED, u.state());
    assertEquals(1, u.receivedParts());
    assertArrayEquals(bytes("0123456789"), journal.transaction(() -> journal.assembled(7, 3)));
    assertArrayEquals(bytes("bundle"),
        journal.transaction(() -> journal.query(1)).orElseThrow().bundleSha256());
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aNewJournalHasOneKibibytePages() throws Exception {
    Path file = dir.resolve("new.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        journal.recordCommand(1, 1, 1, bytes("sha"), bytes("outcome"));
        return null;
      });
    }
    assertEquals(SqliteJournal.PAGE_BYTES, pageSize(file));
  }

  @Test
  void aNewJournalKeysItsSmallRowTablesByTheirPrimaryKeyAlone() throws Exception {
    Path file = dir.resolve("new.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      recordAndReadAStatementsRows(journal);
    }
    // commands and uploads are WITHOUT ROWID, queries' key is its rowid: none needs an index for
    // its key. The rest keep one (larger rows, or rows written too rarely to matter).
    List<String> indexed = keyIndexes(file);
    assertTrue(!indexed.contains("commands") && !indexed.contains("uploads")
        && !indexed.contains("queries"), "key indexes: " + indexed);
    assertTrue(indexed.contains("upload_parts") && indexed.contains("inline_segments"),
        "key indexes: " + indexed);
  }

  @Test
  void aJournalWithTheEarlierTablesKeepsThemAndRecords() throws Exception {
    Path file = dir.resolve("earlier.sqlite");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      s.execute("PRAGMA journal_mode=WAL");
      // The three tables as journals created before the layout change have them.
      s.execute("CREATE TABLE commands (principal BIGINT NOT NULL, sequence BIGINT NOT NULL,"
          + " command_sha256 BLOB NOT NULL, outcome BLOB NOT NULL,"
          + " PRIMARY KEY (principal, sequence))");
      s.execute("CREATE TABLE uploads (principal BIGINT NOT NULL, namespace BIGINT NOT NULL,"
          + " declared_bytes BIGINT NOT NULL, part_count INTEGER NOT NULL,"
          + " bundle_sha256 BLOB NOT NULL, received_parts INTEGER NOT NULL,"
          + " received_bytes BIGINT NOT NULL, state VARCHAR(16) NOT NULL,"
          + " PRIMARY KEY (principal, namespace))");
      s.execute("CREATE TABLE queries (correlation BIGINT PRIMARY KEY,"
          + " principal BIGINT NOT NULL, namespace BIGINT NOT NULL, bundle_sha256 BLOB NOT NULL,"
          + " state VARCHAR(16) NOT NULL, code VARCHAR(64) NOT NULL, stage VARCHAR(32) NOT NULL,"
          + " message VARCHAR(512) NOT NULL, manifest_sha256 BLOB, total_rows BIGINT NOT NULL,"
          + " limit_amount BIGINT NOT NULL, required_amount BIGINT NOT NULL,"
          + " failed_column VARCHAR(256) NOT NULL, released INTEGER NOT NULL, manifest BLOB)");
    }
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      recordAndReadAStatementsRows(journal);
    }
    List<String> indexed = keyIndexes(file);
    assertTrue(indexed.containsAll(List.of("commands", "queries", "uploads")),
        "the earlier tables are kept: " + indexed);
  }

  @Test
  void aJournalFromBeforeTheHistoryColumnsCountsItsUploadsAsBegunAtTheUpgradeAndKeepsItsRecords()
      throws Exception {
    Path file = dir.resolve("before-history.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> null);
    }
    // Back to the tables as they were: no namespace or refusal time on a record, no begin time
    // on an upload.
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      s.execute("DROP INDEX uploads_begun");
      s.execute("DROP INDEX commands_refused");
      s.execute("ALTER TABLE commands DROP COLUMN refused_ms");
      s.execute("ALTER TABLE commands DROP COLUMN namespace");
      s.execute("ALTER TABLE uploads DROP COLUMN begun_ms");
      s.execute("INSERT INTO commands VALUES (4, 20, x'01', x'02')");
      s.execute("INSERT INTO uploads VALUES (4, 20, 3, 1, x'03', 0, 0, 'OPEN')");
    }
    long before = System.currentTimeMillis();
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      long after = System.currentTimeMillis();
      journal.transaction(() -> {
        assertTrue(journal.abandonedBefore(before, 10).isEmpty(), "not older than the upgrade");
        assertEquals(List.of(new JournalStore.Abandoned(4, 20)),
            journal.abandonedBefore(after + 1, 10));
        journal.forgetCommand(4, 20, 20);
        assertTrue(journal.command(4, 20).isPresent(), "a record naming no namespace stays");
        assertEquals(0, journal.forgetRefusedBefore(Long.MAX_VALUE, 10),
            "a record from before names no refusal time");
        assertTrue(journal.command(4, 20).isPresent());
        journal.recordRefusal(4, 21, 99, bytes("sha"), bytes("refused"), after);
        assertEquals(1, journal.forgetRefusedBefore(after + 1, 10), "one recorded since");
        return null;
      });
    }
  }

  /**
   * An upgrade that fails part way (here a back-fill refused by a trigger, as a kill between the
   * column and its back-fill would leave it) adds nothing: the next open adds each column with
   * its back-fill, so results and uploads from before count from the upgrade, not from 0.
   */
  @Test
  void anUpgradeCutShortAddsNoColumnWithoutItsBackFill() throws Exception {
    Path file = dir.resolve("before-retention.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> null);
    }
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      // Back to a journal from before the retention and history columns, with one finished
      // result and one upload.
      s.execute("DROP INDEX queries_retained");
      s.execute("DROP INDEX uploads_begun");
      s.execute("ALTER TABLE queries DROP COLUMN finished_ms");
      s.execute("ALTER TABLE queries DROP COLUMN result_bytes");
      s.execute("ALTER TABLE uploads DROP COLUMN begun_ms");
      s.execute("INSERT INTO queries (correlation, principal, namespace, bundle_sha256, state,"
          + " code, stage, message, total_rows, limit_amount, required_amount, failed_column,"
          + " released, manifest) VALUES (1, 4, 20, x'00', 'SUCCEEDED', '', '', '', 0, 0, 0,"
          + " '', 0, x'01')");
      s.execute("INSERT INTO uploads VALUES (4, 20, 3, 1, x'03', 1, 3, 'SUBMITTED')");
      s.execute("CREATE TRIGGER no_backfill BEFORE UPDATE ON queries"
          + " BEGIN SELECT RAISE(ABORT, 'back-fill refused'); END");
    }
    assertThrows(SQLException.class, () -> SqliteJournal.open(file));
    assertFalse(columns(file, "queries").contains("finished_ms"), "no column without back-fill");
    assertFalse(columns(file, "uploads").contains("begun_ms"));
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      s.execute("DROP TRIGGER no_backfill");
    }
    long before = System.currentTimeMillis();
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      long after = System.currentTimeMillis();
      List<JournalStore.Retained> retained = journal.transaction(() -> journal.oldestRetained(10));
      assertEquals(1, retained.size());
      long finished = retained.get(0).finishedMillis();
      assertTrue(finished >= before && finished <= after, "finished at the upgrade: " + finished);
      journal.transaction(() -> {
        assertTrue(journal.finishedBefore(Long.MAX_VALUE, 10).isEmpty(), "still retained");
        assertTrue(journal.abandonedBefore(Long.MAX_VALUE, 10).isEmpty(), "submitted");
        return null;
      });
    }
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT begun_ms FROM uploads")) {
      assertTrue(r.next());
      assertTrue(r.getLong(1) >= before, "begun at the upgrade: " + r.getLong(1));
    }
  }

  private static List<String> columns(Path file, String table) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("PRAGMA table_info(" + table + ")")) {
      while (r.next()) {
        out.add(r.getString("name"));
      }
    }
    return out;
  }

  @Test
  void aJournalWrittenWithDefaultPagesKeepsThemAndRecords() throws Exception {
    Path file = dir.resolve("old.sqlite");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      s.execute("PRAGMA journal_mode=WAL");
      s.execute("CREATE TABLE counters (name VARCHAR(32) PRIMARY KEY, value BIGINT NOT NULL)");
    }
    assertEquals(4096, pageSize(file));

    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        journal.recordCommand(7, 1, 1, bytes("sha"), bytes("outcome"));
        return null;
      });
    }
    assertEquals(4096, pageSize(file));
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      assertArrayEquals(bytes("outcome"),
          journal.transaction(() -> journal.command(7, 1)).orElseThrow().outcome());
    }
  }
}
