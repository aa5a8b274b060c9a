package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The journal file's page size: a new journal is created with {@link SqliteJournal#PAGE_BYTES}
 * pages, and a journal written before that (SQLite's default 4 KiB, already in WAL mode) keeps its
 * pages and goes on recording — the size is a property of the file, not something to migrate.
 */
class SqliteJournalPageSizeTest {
  @TempDir Path dir;

  private static int pageSize(Path file) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("PRAGMA page_size")) {
      r.next();
      return r.getInt(1);
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aNewJournalHasOneKibibytePages() throws Exception {
    Path file = dir.resolve("new.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        journal.recordCommand(1, 1, bytes("sha"), bytes("outcome"));
        return null;
      });
    }
    assertEquals(SqliteJournal.PAGE_BYTES, pageSize(file));
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
        journal.recordCommand(7, 1, bytes("sha"), bytes("outcome"));
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
