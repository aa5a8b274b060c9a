package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.transit.flight.crypto.Digests;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine's files are private from the moment they exist, whatever the process umask: the
 * journal with its WAL and index, the segment directory and its segments.
 */
class PrivateFilesTest {
  @TempDir Path dir;

  private static String mode(Path p) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }

  @Test
  void aNewJournalAndItsWalAndIndexAreOwnerOnly() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    try (SqliteJournal journal = SqliteJournal.open(file)) {
      journal.transaction(() -> {
        journal.recordCommand(7, 1, 1, "sha".getBytes(StandardCharsets.UTF_8),
            "outcome".getBytes(StandardCharsets.UTF_8));
        return null;
      });
      for (String name : new String[] {"journal.sqlite", "journal.sqlite-wal",
          "journal.sqlite-shm"}) {
        assertEquals("rw-------", mode(dir.resolve(name)), name);
      }
    }
  }

  @Test
  void anExistingJournalIsOpenedWithoutChangingItsMode() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    SqliteJournal.open(file).close();
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r-----"));
    SqliteJournal.open(file).close();
    // Reporting and fixing a loosened mode is the daemon's start-up check, not the engine's.
    assertEquals("rw-r-----", mode(file));
  }

  @Test
  void aNewSegmentDirectoryAndItsSegmentsAreOwnerOnly() throws Exception {
    Path segments = dir.resolve("engine").resolve("segments");
    LocalSegmentStore store = new LocalSegmentStore(segments);
    byte[] sha = store.write("rows".getBytes(StandardCharsets.UTF_8));
    assertEquals("rwx------", mode(dir.resolve("engine")));
    assertEquals("rwx------", mode(segments));
    assertEquals("rw-------", mode(segments.resolve(Digests.hex(sha))));
  }
}
