package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What only the embedded journal's files have: the journal's file kept track of. */
class SqliteJournalTest {
  @TempDir Path dir;

  /**
   * A journal lost under a used state directory (deleted, a restore that left it out) is not
   * replaced by an empty one, which would admit again every statement the lost one recorded:
   * the open refuses, naming both files, until the operator restores it or removes the marker.
   */
  @Test
  void aLostJournalIsRefusedNotCreatedAgainUntilTheOperatorSaysSo() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    try (SqliteJournal j = SqliteJournal.open(file)) {
      j.transaction(() -> j.nextSequence(5, 1));
      j.transaction(() -> {
        j.setNextSequence(5, 9);
        return null;
      });
    }
    Path marker = dir.resolve(SqliteJournal.CREATED_MARKER);
    assertTrue(Files.exists(marker));
    for (String name :
        new String[] {"journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"}) {
      Files.deleteIfExists(dir.resolve(name));
    }
    SQLException e = assertThrows(SQLException.class, () -> SqliteJournal.open(file));
    assertTrue(e.getMessage().contains("is missing, but this state directory had a journal"),
        e.getMessage());
    assertFalse(Files.exists(file), "nothing was created in its place");
    Files.delete(marker);
    try (SqliteJournal j = SqliteJournal.open(file)) {
      assertEquals(1, j.transaction(() -> j.nextSequence(5, 1)), "an empty journal, as asked");
    }
    assertTrue(Files.exists(marker));
  }

  /**
   * A journal file removed or replaced under the running daemon still takes commits through the
   * open descriptor, into a file the next start would not find: once the sweep's check sees it,
   * every transaction fails unrecorded instead. Until 2026-12-07 statements were accepted into it.
   */
  @Test
  void aJournalFileRemovedUnderTheDaemonTakesNoMoreTransactions() throws Exception {
    for (boolean replaced : new boolean[] {false, true}) {
      Path file = Files.createDirectory(dir.resolve(replaced ? "replaced" : "removed"))
          .resolve("journal.sqlite");
      try (SqliteJournal j = SqliteJournal.open(file)) {
        j.checkFile();
        assertEquals(1, j.transaction(() -> j.nextSequence(5, 1)), "in place: works");
        assertEquals(0, j.failures());
        Files.delete(file);
        if (replaced) {
          Files.write(file, new byte[0]);
        }
        j.checkFile();
        JournalStore.NotCommitted e = assertThrows(JournalStore.NotCommitted.class,
            () -> j.transaction(() -> j.nextSequence(5, 1)));
        assertTrue(e.getMessage().contains(replaced ? "was replaced" : "was removed"),
            e.getMessage());
        assertEquals(1, j.failures(), "the operations metrics' outage signal");
      }
    }
  }
}
