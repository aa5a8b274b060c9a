package io.transit.flight.nativequery.embedded;

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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQLite journal's compatibility floor ({@link JournalStore}'s "Formats"), on a real journal
 * file: a floor above {@link JournalStore#FORMAT} (a newer build's journal) is refused at open
 * with one line naming the file and both formats, and the file is left as it was; a missing or
 * lower floor is raised to the build's format; a floor equal to it opens. (The PostgreSQL
 * journal's: PostgresJournalTest.)
 */
class JournalFormatTest {
  @TempDir Path dir;

  /** The floor as the file holds it (the header's user_version), 0 when it holds none. */
  private static long floor(Path file) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("PRAGMA user_version")) {
      return r.next() ? r.getLong(1) : 0;
    }
  }

  private static void execute(Path file, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** A journal holding one recorded command, closed; its file. */
  private Path journalWithACommand() throws Exception {
    Path file = dir.resolve(SqliteJournal.FILE);
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        journal.recordCommand(7, 1, 1, "sha".getBytes(StandardCharsets.UTF_8),
            "outcome".getBytes(StandardCharsets.UTF_8));
        return null;
      });
    }
    return file;
  }

  @Test
  void aNewJournalRecordsThisBuildsFormat() throws Exception {
    assertEquals(JournalStore.FORMAT, floor(journalWithACommand()));
    assertEquals(1, JournalStore.FORMAT, "today's journal is format 1");
  }

  @Test
  void aJournalANewerBuildWroteIsRefusedAtOpenAndLeftAsItWas() throws Exception {
    Path file = journalWithACommand();
    execute(file, "PRAGMA user_version = 2");
    // A column this build adds at open, taken away: the refused open must not add it back.
    execute(file, "DROP INDEX commands_refused");
    execute(file, "ALTER TABLE commands DROP COLUMN refused_ms");

    JournalStore.TooNew refused =
        assertThrows(JournalStore.TooNew.class, () -> SqliteJournal.open(file));
    assertEquals("the journal " + file.toAbsolutePath() + " requires journal format 2 or newer;"
        + " this build implements format 1: run a newer build", refused.getMessage());
    assertFalse(refused.getMessage().contains("\n"), "one line");
    assertEquals(2, floor(file), "never lowered");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery(
            "SELECT count(*) FROM pragma_table_info('commands') WHERE name = 'refused_ms'")) {
      assertTrue(r.next());
      assertEquals(0, r.getLong(1), "the refused open changed nothing");
    }
  }

  @Test
  void aJournalWithoutTheFloorGetsItAndOneAtTheFloorOpens() throws Exception {
    Path file = journalWithACommand();
    execute(file, "PRAGMA user_version = 0"); // as a journal from before the floor
    assertEquals(0, floor(file));
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      assertTrue(journal.transaction(() -> journal.command(7, 1)).isPresent());
    }
    assertEquals(1, floor(file), "a journal from before the floor gets format 1");

    try (SqliteJournal journal = SqliteJournal.open(file)) {
      assertTrue(journal.transaction(() -> journal.command(7, 1)).isPresent());
    }
    assertEquals(1, floor(file));

    execute(file, "PRAGMA user_version = " + (JournalStore.FORMAT - 1));
    SqliteJournal.open(file).close();
    assertEquals(JournalStore.FORMAT, floor(file), "a lower floor is raised to this build's");
  }
}
