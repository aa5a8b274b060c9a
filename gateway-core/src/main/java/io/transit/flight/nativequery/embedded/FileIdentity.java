package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;

/**
 * What a published data file was when the engine opened: its size, modification time and the
 * SHA-256 of the bytes that describe its contents — a Parquet file's footer (row groups, column
 * chunk offsets and statistics), an Arrow IPC file's footer (record batch blocks), or for a CSV
 * file its first and last 64 KiB. Published files are immutable inputs: scanning them in place is
 * only sound while they stay what they were, so every execution compares the file against this
 * identity before and after it scans.
 *
 * <p>The comparison digests the footer again only when the file's inode change time (ctime) or
 * file key (device and inode) moved since the identity was taken, or when that ctime was not
 * settled then. Every write, truncation, rename over the file and attribute change sets ctime to
 * the current time, and no system call sets it back, so an unchanged ctime on the same inode
 * means no byte changed. The kernel stamps ctime from a coarse clock (one tick, up to 10 ms), so
 * a write in the same tick as the identity's stat could keep it: a ctime younger than {@link
 * #SETTLED_NANOS} at that stat is not trusted, and such a file is digested at every check.
 * Filesystems without a Unix ctime are digested at every check too.
 *
 * <p>Immutable; {@link #of} and {@link #change} may run on any thread (the engine's opening thread,
 * query runner threads). Neither reads the body of a file: one stat and at most one small read.
 *
 * @param path the file
 * @param size its length in bytes
 * @param modifiedNanos its modification time, nanoseconds since the epoch
 * @param digest SHA-256 of its footer (Parquet, Arrow) or of its head and tail (CSV)
 * @param changedNanos its ctime when the digest was taken, or -1 when a later check must digest
 *     again (no Unix ctime, or not settled then)
 * @param fileKey its device and inode, or null when the filesystem has none
 */
record FileIdentity(Path path, long size, long modifiedNanos, byte[] digest, long changedNanos,
    Object fileKey) {
  private static final byte[] PARQUET_MAGIC = {'P', 'A', 'R', '1'};
  private static final byte[] ARROW_MAGIC = {'A', 'R', 'R', 'O', 'W', '1'};
  /** How much of a CSV file's head and tail is digested. */
  static final int CSV_EDGE_BYTES = 64 * 1024;
  /**
   * The longest footer a file may declare. Real footers (the schema, the row groups' statistics)
   * are kilobytes to a few megabytes; the declared length is only the file's word.
   */
  static final long MAX_FOOTER_BYTES = 256L << 20;
  /** The footer is hashed in pieces of this size. */
  static final int DIGEST_CHUNK_BYTES = 64 * 1024;
  /** How old a ctime must be, when the identity is taken, to stand for the bytes. */
  static final long SETTLED_NANOS = 1_000_000_000L;
  private static final String ATTRIBUTES = "unix:isRegularFile,size,lastModifiedTime,ctime,fileKey";

  /**
   * Reads the identity of {@code file} in {@code format} ({@code parquet}, {@code arrow} or
   * {@code csv}).
   *
   * @throws IOException the file cannot be read, or its trailer is not the format's
   */
  static FileIdentity of(Path file, String format) throws IOException {
    return of(file, format, System.currentTimeMillis() * 1_000_000L);
  }

  /** As {@link #of(Path, String)}, taken at {@code nowNanos} (wall clock, ns since the epoch). */
  static FileIdentity of(Path file, String format, long nowNanos) throws IOException {
    Stat st = Stat.of(file);
    if (!st.regular()) {
      throw new IOException(file + " is not a regular file");
    }
    byte[] digest;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      digest = switch (format) {
        case "parquet" -> footerDigest(ch, file, PARQUET_MAGIC);
        case "arrow" -> footerDigest(ch, file, ARROW_MAGIC);
        default -> edgesDigest(ch);
      };
    }
    boolean settled = st.changedNanos() >= 0 && st.changedNanos() < nowNanos - SETTLED_NANOS;
    return new FileIdentity(file, st.size(), st.modifiedNanos(), digest,
        settled ? st.changedNanos() : -1, st.fileKey());
  }

  /**
   * What changed since this identity was taken — {@code "missing"}, {@code "size"},
   * {@code "modification time"} or {@code "footer"} — or null when the file is as it was.
   *
   * @throws IOException only when the process is out of file descriptors ({@link OpenFiles}):
   *     the file could not be looked at, which says nothing about it
   */
  String change(String format) throws IOException {
    Stat st;
    try {
      st = Stat.of(path);
    } catch (NoSuchFileException e) {
      return "missing";
    } catch (IOException e) {
      if (OpenFiles.exhausted(e)) {
        throw e;
      }
      return Files.exists(path) ? "footer" : "missing";
    }
    if (st.regular() && st.size() == size && st.modifiedNanos() == modifiedNanos
        && changedNanos >= 0 && st.changedNanos() == changedNanos && fileKey != null
        && fileKey.equals(st.fileKey())) {
      return null; // no write since the digest was taken (class comment)
    }
    FileIdentity now;
    try {
      now = of(path, format);
    } catch (NoSuchFileException e) {
      return "missing";
    } catch (IOException e) {
      if (OpenFiles.exhausted(e)) {
        throw e;
      }
      // Unreadable or no longer the format: either way not the file that was published.
      return Files.exists(path) ? "footer" : "missing";
    }
    if (now.size != size) {
      return "size";
    }
    if (now.modifiedNanos != modifiedNanos) {
      return "modification time";
    }
    return Arrays.equals(now.digest, digest) ? null : "footer";
  }

  /** One stat of a file; ctime -1 where the filesystem has no Unix attributes. */
  private record Stat(boolean regular, long size, long modifiedNanos, long changedNanos,
      Object fileKey) {
    static Stat of(Path file) throws IOException {
      try {
        Map<String, Object> a = Files.readAttributes(file, ATTRIBUTES);
        return new Stat((Boolean) a.get("isRegularFile"), (Long) a.get("size"),
            nanos((FileTime) a.get("lastModifiedTime")), nanos((FileTime) a.get("ctime")),
            a.get("fileKey"));
      } catch (UnsupportedOperationException | IllegalArgumentException e) {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        return new Stat(a.isRegularFile(), a.size(), nanos(a.lastModifiedTime()), -1,
            a.fileKey());
      }
    }

    private static long nanos(FileTime t) {
      return t.toInstant().getEpochSecond() * 1_000_000_000L + t.toInstant().getNano();
    }
  }

  /** The digest in hex, for keys and logs. */
  String digestHex() {
    return HexFormat.of().formatHex(digest);
  }

  /**
   * SHA-256 of the footer and its trailer: {@code [footer][int32 LE length][magic]} at the end of
   * the file, the same layout for Parquet and Arrow IPC files.
   */
  private static byte[] footerDigest(FileChannel ch, Path file, byte[] magic) throws IOException {
    long size = ch.size();
    int trailer = 4 + magic.length;
    if (size < trailer + magic.length) {
      throw new IOException(file.getFileName() + " is too short for its format");
    }
    ByteBuffer tail = read(ch, size - trailer, trailer).order(ByteOrder.LITTLE_ENDIAN);
    byte[] found = new byte[magic.length];
    tail.position(4);
    tail.get(found);
    if (!Arrays.equals(found, magic)) {
      throw new IOException(file.getFileName() + " does not end with the format's magic bytes");
    }
    long footer = Integer.toUnsignedLong(tail.getInt(0));
    if (footer > size - trailer - magic.length) {
      throw new IOException(file.getFileName() + " declares a footer longer than the file");
    }
    if (footer > MAX_FOOTER_BYTES) {
      throw new IOException(file.getFileName() + " declares a footer of " + footer
          + " bytes, over the " + MAX_FOOTER_BYTES + " this gateway reads");
    }
    // In pieces: the length is the file's word (until 2026-12-07 one heap buffer of that size).
    MessageDigest md = Digests.sha256();
    ByteBuffer chunk = ByteBuffer.allocate(DIGEST_CHUNK_BYTES);
    long end = size;
    for (long at = size - trailer - footer; at < end; at += chunk.limit()) {
      chunk.clear().limit((int) Math.min(DIGEST_CHUNK_BYTES, end - at));
      fill(ch, chunk, at);
      md.update(chunk.flip());
    }
    return md.digest();
  }

  private static byte[] edgesDigest(FileChannel ch) throws IOException {
    long size = ch.size();
    MessageDigest md = Digests.sha256();
    md.update(read(ch, 0, (int) Math.min(size, CSV_EDGE_BYTES)));
    long tailStart = Math.max(CSV_EDGE_BYTES, size - CSV_EDGE_BYTES);
    if (tailStart < size) {
      md.update(read(ch, tailStart, (int) (size - tailStart)));
    }
    return md.digest();
  }

  private static ByteBuffer read(FileChannel ch, long position, int length) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(length);
    fill(ch, b, position);
    return b.flip();
  }

  /** Fills {@code b}'s remaining bytes from the file at {@code position}. */
  private static void fill(FileChannel ch, ByteBuffer b, long position) throws IOException {
    long start = position - b.position();
    while (b.hasRemaining()) {
      if (ch.read(b, start + b.position()) < 0) {
        throw new IOException("the file ended while its trailer was read");
      }
    }
  }
}
