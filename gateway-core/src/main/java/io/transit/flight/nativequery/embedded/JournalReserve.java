package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Room kept on the embedded journal's file system for the commits that give room back. The
 * retention sweep releases a result in the journal before it removes the result's files (so no
 * retained manifest ever names a removed file); on a file system that results filled, that
 * release could not commit, so nothing was ever removed, and a restart did not help either (its
 * WAL could not be checkpointed). A file of random bytes beside the journal ({@code
 * journal.reserve}) holds the room: a release that finds the file system full frees it and
 * commits, the removals that follow give the space back, and the file is written again once twice
 * its size is free.
 *
 * <p>Size: an eighth of the file system, at most 8 MiB (a release commits a few pages).
 *
 * <p>Threads: {@link #free} and {@link #refill} run on the retention sweep's thread (one sweep at a
 * time) and {@link #atOpen} on the journal's open, before the sweep starts; nothing else touches
 * the file.
 */
final class JournalReserve {
  private static final Logger log = LoggerFactory.getLogger(JournalReserve.class);
  static final String FILE_NAME = "journal.reserve";
  private static final long MAX_BYTES = 8L << 20;

  private final Path file;

  JournalReserve(Path journal) {
    this.file = journal.toAbsolutePath().resolveSibling(FILE_NAME);
  }

  /**
   * At the journal's open: a file system left full (by a run before) gets its reserve's room.
   * Writing a missing one is left to the retention sweep (a journal opened only to be read, or
   * for a start's warm-up, never writes one).
   */
  void atOpen() {
    try {
      FileStore store = Files.getFileStore(file.getParent());
      if (store.getUsableSpace() < size(store)) {
        free();
      }
    } catch (IOException | RuntimeException e) {
      log.warn("journal reserve {}: {}", file, e.toString());
    }
  }

  /** Frees the reserve; true when there was one to free. Never throws. */
  boolean free() {
    try {
      if (Files.deleteIfExists(file)) {
        log.warn("the journal's file system is full: freed the reserve ({}) so that the retention"
            + " sweep can release results and remove their files", file);
        return true;
      }
    } catch (IOException | RuntimeException e) {
      log.warn("journal reserve {}: {}", file, e.toString());
    }
    return false;
  }

  /** Writes the reserve again when it is missing and twice its size is free. Never throws. */
  void refill() {
    try {
      if (Files.exists(file)) {
        return;
      }
      FileStore store = Files.getFileStore(file.getParent());
      long size = size(store);
      if (size > 0 && store.getUsableSpace() >= 2 * size) {
        write(size);
        log.info("journal reserve: {} bytes held at {}", size, file);
      }
    } catch (IOException | RuntimeException e) {
      log.warn("journal reserve {}: {}", file, e.toString());
    }
  }

  private static long size(FileStore store) throws IOException {
    return Math.min(MAX_BYTES, store.getTotalSpace() / 8);
  }

  private void write(long size) throws IOException {
    Path temp = file.resolveSibling(FILE_NAME + ".tmp");
    Files.deleteIfExists(temp);
    PrivateFiles.file(temp);
    try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
      byte[] noise = new byte[64 * 1024];
      new java.util.SplittableRandom().nextBytes(noise);
      ByteBuffer chunk = ByteBuffer.wrap(noise);
      // Written, not truncated to size, and not zeros: a sparse file, or zeros a compressing file
      // system (ZFS, btrfs) stores as holes, would hold no room.
      for (long written = 0; written < size; ) {
        chunk.clear().limit((int) Math.min(chunk.capacity(), size - written));
        written += ch.write(chunk);
      }
      ch.force(true);
    } catch (IOException e) {
      Files.deleteIfExists(temp);
      throw e;
    }
    Files.move(temp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }
}
