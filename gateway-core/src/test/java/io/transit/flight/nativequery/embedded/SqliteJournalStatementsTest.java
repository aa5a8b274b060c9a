package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQLite journal's statement cache: a failure of SQLite itself drops it (the driver may leave
 * a failed statement finalized), a failure of the work alone keeps it, and either way the next
 * transaction runs.
 */
class SqliteJournalStatementsTest {
  @TempDir Path dir;

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void onlyAnSqlFailureDropsTheCachedStatements() throws Exception {
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve("journal.sqlite"))) {
      journal.transaction(() -> {
        journal.recordCommand(1, 1, bytes("sha"), bytes("outcome"));
        return journal.command(1, 1);
      });
      int cached = journal.cachedStatements();
      assertTrue(cached > 0);

      assertThrows(IllegalStateException.class, () -> journal.transaction(() -> {
        journal.command(1, 1);
        throw new IllegalStateException("the decision failed");
      }));
      assertEquals(cached, journal.cachedStatements(), "the work's own failure keeps the cache");

      // The same (principal, sequence) again: SQLite refuses it (primary key).
      assertThrows(SQLException.class, () -> journal.transaction(() -> {
        journal.recordCommand(1, 1, bytes("other"), bytes("outcome"));
        return null;
      }));
      assertEquals(0, journal.cachedStatements(), "an SQLite failure drops the cache");
      assertArrayEquals(bytes("outcome"),
          journal.transaction(() -> journal.command(1, 1)).orElseThrow().outcome());
    }
  }
}
