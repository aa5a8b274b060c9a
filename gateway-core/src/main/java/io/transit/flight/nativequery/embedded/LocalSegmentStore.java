package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Today's {@link SegmentStore}: content-addressed files in a local directory, {@code
 * segments/<sha256-hex>}. A segment is written to
 * a temporary file, fsynced and renamed into place; {@link #sync()} then fsyncs the directory once
 * for all of a result's renames, before the manifest naming them commits. After a crash a named
 * file is either absent or complete. Identical segments share one file, so files are never
 * deleted by one result's release. Any thread may call any method; concurrent writers of the same
 * content both rename complete files over each other.
 *
 * <p>{@link #sync()} skips the directory fsync when no rename can be undurable: each rename is
 * counted as started (under this object's monitor) before it is issued and as done after it
 * returned, and a sync records the done count read before its fsync once the fsync returned. It
 * skips only when that record reaches the started count, i.e. every rename ever issued finished
 * before a completed fsync began. A writer that finds its content already stored (possibly renamed
 * by another thread a moment ago) thus syncs unless that rename is already durable. The counts
 * start ahead of the record, so files left by an earlier process are synced once before first use.
 *
 * <p>A writer whose content is already stored reuses the file only once it has read it back and
 * found its SHA-256: a damaged file of the right size is replaced, never named by a new manifest.
 *
 * <p>A process out of file descriptors, or a thread interrupted mid-call (a shutdown), could not
 * answer: every method then throws {@link Unavailable} ({@code open_files}, {@code interrupted}),
 * as a remote store that cannot be reached does, never a failure a reader would take for a
 * damaged segment ({@link OpenFiles}).
 */
final class LocalSegmentStore implements SegmentStore {
  private final Path dir;
  // @GuardedBy("this"): renames issued, and renames returned (or failed); one extra each stands
  // for the files found at open.
  private long renamesStarted = 1;
  private long renamesDone = 1;
  // @GuardedBy("this"): the renamesDone value the last finished directory fsync covered.
  private long renamesSynced;
  // @GuardedBy("this"): directory fsyncs done (tests check the skip).
  private long directorySyncs;

  LocalSegmentStore(Path dir) throws IOException {
    this.dir = PrivateFiles.directories(dir);
  }

  /**
   * Any failure but a full file system is {@link Unavailable} ({@code io}: a read-only remount, a
   * file-size limit, a removed directory): nothing is recorded and the query runs again once the
   * directory takes the segment (docs/status.md), where until 2026-12-07 it failed for good as
   * {@code query.internal}. A directory removed under the daemon is made again first.
   */
  @Override
  public byte[] write(byte[] bytes) throws IOException {
    try {
      try {
        return writeFile(bytes);
      } catch (java.nio.file.NoSuchFileException gone) {
        PrivateFiles.directories(dir);
        return writeFile(bytes);
      }
    } catch (IOException e) {
      IOException f = failed(e);
      throw f instanceof DiskFull || f instanceof Unavailable ? f : new Unavailable("io", f);
    }
  }

  /**
   * {@code e} as the store answers it: a process out of descriptors ({@link OpenFiles}) or a
   * thread interrupted mid-call (the engine's or the producers' shutdown: the channel is closed
   * under it) could not answer, which is {@link Unavailable}, never a damaged segment or a failed
   * query.
   */
  private static IOException failed(IOException e) {
    if (e instanceof ClosedByInterruptException || e instanceof InterruptedIOException) {
      return new Unavailable("interrupted", e);
    }
    return OpenFiles.unavailable(e);
  }

  private byte[] writeFile(byte[] bytes) throws IOException {
    byte[] sha = Digests.sha256(bytes);
    Path target = dir.resolve(Digests.hex(sha));
    if (Files.isRegularFile(target) && Files.size(target) == bytes.length
        && holds(target, sha)) {
      return sha;
    }
    // Refused before writing when it cannot fit: a full disk is the caller's RESOURCE_EXHAUSTED.
    long usable = usable();
    if (usable < bytes.length) {
      throw new DiskFull(usable, bytes.length, null);
    }
    Path temp;
    try {
      temp = Files.createTempFile(dir, "segment-", ".tmp");
    } catch (IOException e) {
      throw full(e, bytes.length);
    }
    try {
      try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
          ch.write(b);
        }
        ch.force(true);
      } catch (IOException e) {
        // The space check raced another writer, or metadata/blocks did not fit after all.
        throw full(e, bytes.length);
      }
      synchronized (this) {
        renamesStarted++;
      }
      try {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
      } finally {
        synchronized (this) {
          renamesDone++;
        }
      }
    } finally {
      Files.deleteIfExists(temp);
    }
    return sha;
  }

  /**
   * Whether {@code file} holds the bytes of {@code sha}: a file kept its size but not its bytes
   * (a damaged disk, a bad restore) is written again, never named by a new manifest as it is.
   * Reading it back costs less than the write and fsync it saves.
   */
  private static boolean holds(Path file, byte[] sha) {
    java.security.MessageDigest digest = Digests.sha256();
    ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      while (ch.read(chunk) >= 0) {
        chunk.flip();
        digest.update(chunk);
        chunk.clear();
      }
    } catch (IOException e) {
      return false; // unreadable as it is: written again
    }
    return java.security.MessageDigest.isEqual(sha, digest.digest());
  }

  @Override
  public Optional<byte[]> read(byte[] sha256, long expectedBytes) throws IOException {
    try (FileChannel ch = FileChannel.open(dir.resolve(Digests.hex(sha256)),
        StandardOpenOption.READ)) {
      if (ch.size() != expectedBytes || expectedBytes > Integer.MAX_VALUE) {
        throw new WrongSize();
      }
      byte[] bytes = new byte[(int) expectedBytes];
      readExactly(ch, ByteBuffer.wrap(bytes));
      return Optional.of(bytes);
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw failed(e);
    }
  }

  @Override
  public Optional<ArrowBuf> read(byte[] sha256, long expectedBytes, BufferAllocator allocator)
      throws IOException {
    try {
      return readInto(sha256, expectedBytes, allocator);
    } catch (IOException e) {
      throw failed(e);
    }
  }

  private Optional<ArrowBuf> readInto(byte[] sha256, long expectedBytes,
      BufferAllocator allocator) throws IOException {
    try (FileChannel ch = FileChannel.open(dir.resolve(Digests.hex(sha256)),
        StandardOpenOption.READ)) {
      if (ch.size() != expectedBytes || expectedBytes > Integer.MAX_VALUE) {
        throw new WrongSize();
      }
      ArrowBuf buf = allocator.buffer(expectedBytes);
      try {
        readExactly(ch, buf.nioBuffer(0, (int) expectedBytes));
        buf.writerIndex(expectedBytes);
        return Optional.of(buf);
      } catch (IOException | RuntimeException e) {
        buf.close();
        throw e;
      }
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
  }

  /** Fills {@code target} from {@code ch}, which must end right there (else it changed size). */
  private static void readExactly(FileChannel ch, ByteBuffer target) throws IOException {
    while (target.hasRemaining()) {
      if (ch.read(target) < 0) {
        throw new WrongSize();
      }
    }
    if (ch.read(ByteBuffer.allocate(1)) >= 0) {
      throw new WrongSize();
    }
  }

  private long usable() throws IOException {
    return Files.getFileStore(dir).getUsableSpace();
  }

  /**
   * {@code e} as {@link DiskFull} when the file system has less room than {@code needed}, or the
   * OS said ENOSPC (block rounding can refuse a write the usable count seemed to allow).
   */
  private IOException full(IOException e, long needed) {
    try {
      long usable = usable();
      boolean noSpace = e.getMessage() != null && e.getMessage().contains("No space left");
      return usable < needed || noSpace ? new DiskFull(usable, needed, e) : e;
    } catch (IOException again) {
      return e;
    }
  }

  /**
   * The stored segments' digests; on the way, removes the temporaries older than {@link
   * #ABANDONED_TEMPORARY} (the retention sweep lists the store: a writer killed or powered off
   * between its temporary's creation and its rename leaves the file, which no later write would
   * ever remove).
   */
  @Override
  public java.util.List<byte[]> stored() throws IOException {
    try {
      return listStored();
    } catch (java.nio.file.NoSuchFileException gone) {
      // Removed under the daemon: nothing is stored, and the next write has its directory.
      PrivateFiles.directories(dir);
      return java.util.List.of();
    } catch (IOException e) {
      throw failed(e);
    }
  }

  private java.util.List<byte[]> listStored() throws IOException {
    java.util.List<byte[]> out = new java.util.ArrayList<>();
    long abandonedBefore = System.currentTimeMillis() - ABANDONED_TEMPORARY.toMillis();
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        // Only final names (64 hex digits); temporaries belong to a writer in progress.
        if (name.length() == 64 && name.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
          out.add(java.util.HexFormat.of().parseHex(name));
        } else if (name.startsWith("segment-") && name.endsWith(".tmp")) {
          removeIfAbandoned(f, abandonedBefore);
        }
      }
    }
    return out;
  }

  /**
   * A temporary untouched for this long has no writer: a write renames or deletes its temporary
   * within one segment's write and fsync (at most {@code max_segment_bytes}), seconds at most.
   */
  static final java.time.Duration ABANDONED_TEMPORARY = java.time.Duration.ofMinutes(10);

  private static void removeIfAbandoned(Path temporary, long abandonedBefore) {
    try {
      if (Files.getLastModifiedTime(temporary).toMillis() < abandonedBefore) {
        Files.deleteIfExists(temporary);
      }
    } catch (IOException e) {
      // Renamed or removed by its writer meanwhile, or not removable now: the next sweep sees.
    }
  }

  @Override
  public boolean remove(byte[] sha256) throws IOException {
    return Files.deleteIfExists(path(sha256));
  }

  Path path(byte[] sha256) {
    return dir.resolve(Digests.hex(sha256));
  }

  @Override
  public void sync() throws IOException {
    long covers;
    synchronized (this) {
      if (renamesSynced == renamesStarted) {
        return;
      }
      covers = renamesDone;
    }
    // Makes the rename itself durable; some platforms cannot open a directory for sync.
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      if (!System.getProperty("os.name", "").startsWith("Windows")) {
        throw failed(e);
      }
    }
    synchronized (this) {
      renamesSynced = Math.max(renamesSynced, covers);
      directorySyncs++;
    }
  }

  synchronized long directorySyncs() {
    return directorySyncs;
  }
}
