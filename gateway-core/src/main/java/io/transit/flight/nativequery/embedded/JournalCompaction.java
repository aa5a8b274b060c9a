package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Gives the file system back the space the embedded journal's file keeps after deletes. SQLite
 * reuses a deleted row's pages for later rows but never shrinks the file, so a journal whose
 * history the bound has just forgotten (docs/limits.md "What the journal keeps") stays as large
 * as it ever was. This writes the live pages into a new file beside it ({@code VACUUM INTO}: it
 * needs free space for the live data only, in the engine directory, not in a temporary
 * directory), makes it durable, and renames it over the journal: a crash before the rename
 * leaves the journal as it was (the next compaction removes the partial copy), one after it the
 * compacted journal, never a mix.
 *
 * <p>Threads: the caller's only. The caller must hold the state directory's lock, so that no
 * engine has the journal open (the rename would leave an open engine writing to the old file).
 */
public final class JournalCompaction {
  private static final String JOURNAL = SqliteJournal.FILE;
  private static final String COPY = JOURNAL + ".compact";

  /** Bytes of the journal's files (with its WAL) before and after, and its free pages before. */
  public record Result(long bytesBefore, long bytesAfter, long freePagesBefore) {}

  private JournalCompaction() {}

  /** Compacts {@code engineDir}'s journal; see the class comment. */
  public static Result compact(Path engineDir) throws IOException, SQLException {
    Path journal = engineDir.resolve(JOURNAL);
    Path copy = engineDir.resolve(COPY);
    Path wal = engineDir.resolve(JOURNAL + "-wal");
    Path shm = engineDir.resolve(JOURNAL + "-shm");
    if (!Files.isRegularFile(journal)) {
      throw new IOException(journal + ": no journal to compact");
    }
    Files.deleteIfExists(copy); // what an interrupted compaction left
    long before = Files.size(journal) + sizeOrZero(wal);
    long free;
    try {
      try (Connection c = SqliteJournal.sideConnection(journal, "PRAGMA busy_timeout=10000");
          Statement s = c.createStatement()) {
        free = single(s, "PRAGMA freelist_count");
        // The copy reads through the WAL anyway; checkpointed first, the WAL is empty when the
        // connection closes, and the rename below cannot meet frames of the old file.
        checkpoint(s);
        PrivateFiles.file(copy); // VACUUM INTO accepts an empty file: created 0600 first
        try (var p = c.prepareStatement("VACUUM INTO ?")) {
          p.setString(1, copy.toAbsolutePath().toString());
          p.execute();
        }
      }
      try (FileChannel f = FileChannel.open(copy, StandardOpenOption.WRITE)) {
        f.force(true);
      }
    } catch (IOException | SQLException | RuntimeException e) {
      Files.deleteIfExists(copy); // a full disk, say: its space back, the journal untouched
      throw e;
    }
    // Closed and checkpointed, SQLite removed the WAL and its index; a WAL left must be empty,
    // or it would be replayed over the renamed copy.
    if (sizeOrZero(wal) > 0) {
      Files.delete(copy);
      throw new IOException(wal + " still holds frames after its checkpoint: not compacted");
    }
    Files.deleteIfExists(wal);
    Files.deleteIfExists(shm);
    Files.move(copy, journal, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    try (FileChannel dir = FileChannel.open(engineDir, StandardOpenOption.READ)) {
      dir.force(true); // the rename itself durable
    }
    return new Result(before, Files.size(journal), free);
  }

  private static void checkpoint(Statement s) throws SQLException {
    try (ResultSet r = s.executeQuery("PRAGMA wal_checkpoint(TRUNCATE)")) {
      if (r.next() && r.getInt(1) != 0) {
        throw new SQLException("the journal's WAL could not be checkpointed (busy): is a gateway"
            + " still using it?");
      }
    }
  }

  private static long single(Statement s, String sql) throws SQLException {
    try (ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getLong(1);
    }
  }

  private static long sizeOrZero(Path file) throws IOException {
    return Files.exists(file) ? Files.size(file) : 0;
  }
}
