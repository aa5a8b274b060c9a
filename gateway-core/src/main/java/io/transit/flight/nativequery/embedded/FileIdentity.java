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
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * What a published data file was when the engine opened: its size, modification time and the
 * SHA-256 of the bytes that describe its contents — a Parquet file's footer (row groups, column
 * chunk offsets and statistics), an Arrow IPC file's footer (record batch blocks), or for a CSV
 * file its first and last 64 KiB. Published files are immutable inputs: scanning them in place is
 * only sound while they stay what they were, so every execution compares the file against this
 * identity before and after it scans.
 *
 * <p>Immutable; {@link #of} and {@link #change} may run on any thread (the engine's opening thread,
 * query runner threads). Neither reads the body of a file: a few stat calls and one small read.
 *
 * @param path the file
 * @param size its length in bytes
 * @param modifiedNanos its modification time, nanoseconds since the epoch
 * @param digest SHA-256 of its footer (Parquet, Arrow) or of its head and tail (CSV)
 */
record FileIdentity(Path path, long size, long modifiedNanos, byte[] digest) {
  private static final byte[] PARQUET_MAGIC = {'P', 'A', 'R', '1'};
  private static final byte[] ARROW_MAGIC = {'A', 'R', 'R', 'O', 'W', '1'};
  /** How much of a CSV file's head and tail is digested. */
  static final int CSV_EDGE_BYTES = 64 * 1024;

  /**
   * Reads the identity of {@code file} in {@code format} ({@code parquet}, {@code arrow} or
   * {@code csv}).
   *
   * @throws IOException the file cannot be read, or its trailer is not the format's
   */
  static FileIdentity of(Path file, String format) throws IOException {
    BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
    if (!a.isRegularFile()) {
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
    return new FileIdentity(file, a.size(), a.lastModifiedTime().toInstant().getEpochSecond()
        * 1_000_000_000L + a.lastModifiedTime().toInstant().getNano(), digest);
  }

  /**
   * What changed since this identity was taken — {@code "missing"}, {@code "size"},
   * {@code "modification time"} or {@code "footer"} — or null when the file is as it was.
   */
  String change(String format) {
    FileIdentity now;
    try {
      now = of(path, format);
    } catch (NoSuchFileException e) {
      return "missing";
    } catch (IOException e) {
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
    MessageDigest md = Digests.sha256();
    md.update(read(ch, size - trailer - footer, (int) (footer + trailer)));
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
    while (b.hasRemaining()) {
      if (ch.read(b, position + b.position()) < 0) {
        throw new IOException("the file ended while its trailer was read");
      }
    }
    return b.flip();
  }
}
