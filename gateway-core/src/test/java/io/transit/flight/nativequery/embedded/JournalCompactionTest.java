package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JournalCompactionTest {
  private static final int UPLOADS = 2_000;

  @TempDir Path dir;

  /** Uploads of 4 KiB each, all but every hundredth then forgotten, as the history bound does. */
  private void journalWithMostOfItForgotten() throws Exception {
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve(SqliteJournal.FILE))) {
      journal.transaction(() -> {
        for (long ns = 1; ns <= UPLOADS; ns++) {
          journal.beginUpload(7, ns, 4096, 1, new byte[32], 0);
          journal.addPart(7, ns, 0, part(ns));
          journal.recordCommand(7, ns, ns, new byte[32], new byte[] {(byte) ns});
        }
        journal.setNextSequence(7, UPLOADS + 1);
        return null;
      });
      journal.transaction(() -> {
        for (long ns = 1; ns <= UPLOADS; ns++) {
          if (ns % 100 != 0) {
            journal.forgetCommand(7, ns);
            journal.forgetUpload(7, ns);
          }
        }
        return null;
      });
    }
  }

  private static byte[] part(long ns) {
    byte[] b = new byte[4096];
    java.util.Arrays.fill(b, (byte) ns);
    return b;
  }

  @Test
  void theFreedPagesGoBackAndEveryRowStaysReadable() throws Exception {
    journalWithMostOfItForgotten();
    Path file = dir.resolve(SqliteJournal.FILE);
    JournalCompaction.Result r = JournalCompaction.compact(dir);
    assertTrue(r.freePagesBefore() > 0, r.toString());
    assertTrue(r.bytesAfter() * 5 < r.bytesBefore(), r.toString());
    assertEquals(Files.size(file), r.bytesAfter());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertFalse(Files.exists(dir.resolve(SqliteJournal.FILE + ".compact")));

    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        assertEquals(UPLOADS + 1, journal.nextSequence(7, 1));
        for (long ns = 1; ns <= UPLOADS; ns++) {
          assertEquals(ns % 100 == 0, journal.upload(7, ns).isPresent(), "upload " + ns);
          assertEquals(ns % 100 == 0, journal.command(7, ns).isPresent(), "command " + ns);
        }
        assertArrayEquals(part(300), journal.assembled(7, 300));
        return null;
      });
      // It goes on as a journal: a new row commits and reads back.
      journal.transaction(() -> {
        journal.recordCommand(7, UPLOADS + 1, UPLOADS + 1, new byte[32], new byte[] {1});
        journal.setNextSequence(7, UPLOADS + 2);
        return null;
      });
    }
    JournalCompaction.Result again = JournalCompaction.compact(dir);
    assertEquals(0, again.freePagesBefore(), "nothing left to give back");
  }

  @Test
  void aCopyAnInterruptedCompactionLeftIsReplacedAndAMissingJournalIsRefused() throws Exception {
    journalWithMostOfItForgotten();
    Files.write(dir.resolve(SqliteJournal.FILE + ".compact"), new byte[] {1, 2, 3});
    JournalCompaction.compact(dir);
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve(SqliteJournal.FILE))) {
      assertTrue(journal.transaction(() -> journal.upload(7, 100)).isPresent());
    }
    IOException missing = assertThrows(IOException.class,
        () -> JournalCompaction.compact(dir.resolve("elsewhere")));
    assertTrue(missing.getMessage().contains("no journal to compact"), missing.getMessage());
  }

  @Test
  void aFileThatIsNoJournalIsLeftAsItWasWithNoCopy() throws Exception {
    byte[] garbage = new byte[8192];
    java.util.Arrays.fill(garbage, (byte) 'x');
    Path file = dir.resolve(SqliteJournal.FILE);
    Files.write(file, garbage);
    assertThrows(java.sql.SQLException.class, () -> JournalCompaction.compact(dir));
    assertArrayEquals(garbage, Files.readAllBytes(file));
    assertFalse(Files.exists(dir.resolve(SqliteJournal.FILE + ".compact")));
  }
}
