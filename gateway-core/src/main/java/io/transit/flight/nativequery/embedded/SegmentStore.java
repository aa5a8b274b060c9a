package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.util.Optional;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Where retained segments live, addressed by the SHA-256 of their bytes. The engine's logic sees
 * only this interface; {@link LocalSegmentStore} (a local directory) is the default, and {@link
 * S3SegmentStore} (an S3-API object store, for a replicated deployment) implements the same
 * methods.
 *
 * <p>Contract for every implementation: a segment named by a manifest is either absent or
 * complete, never partial; identical content is stored once and never deleted by one result's
 * release; after {@link #sync} returns, every segment written before it is durable, so the
 * manifest naming them may commit. Any thread may call any method except {@link #close}, which
 * the engine calls once, after its execution pool and retention sweep have stopped.
 *
 * <p>A store that cannot be reached (a remote store's network, timeouts, a server error) throws
 * {@link Unavailable}, never a partial or empty answer: under a read the engine turns it into
 * {@code query.segment_store_unavailable} (UNAVAILABLE); under a statement's write it runs the
 * statement again later (nothing recorded), as when the journal cannot take its status.
 */
interface SegmentStore extends AutoCloseable {
  /** Stores {@code bytes} under their SHA-256; returns the digest. Durable after {@link #sync}. */
  byte[] write(byte[] bytes) throws IOException;

  /**
   * The stored bytes on the heap, or empty when the segment is missing.
   *
   * @throws WrongSize when the segment does not hold exactly {@code expectedBytes}, said before
   *     its bytes are read: a store's object of any other size never reaches the heap
   */
  Optional<byte[]> read(byte[] sha256, long expectedBytes) throws IOException;

  /**
   * Reads the stored segment into a buffer of {@code allocator} without a heap copy; empty when
   * it is missing. The caller owns the returned buffer; its bytes are {@code [0, writerIndex())}.
   *
   * @throws WrongSize when the segment does not hold exactly {@code expectedBytes} (also when its
   *     size changes while it is read)
   */
  Optional<ArrowBuf> read(byte[] sha256, long expectedBytes, BufferAllocator allocator)
      throws IOException;

  /** Makes every segment written so far durable. */
  void sync() throws IOException;

  /** Digests of every stored segment (a snapshot; the retention sweep's candidates). */
  java.util.List<byte[]> stored() throws IOException;

  /**
   * Removes one stored segment; false when it was absent. Only the retention sweep calls it, for
   * a segment no unreleased manifest names, while no query is writing (see {@link Retention}).
   */
  boolean remove(byte[] sha256) throws IOException;

  /** Releases what the store holds (a remote store's connections); a local store has nothing. */
  @Override
  default void close() {}

  /**
   * Whether the store answers now, within about a second: a caller waiting on a query held for
   * the store (its segments not yet taken) asks, so that it can answer UNAVAILABLE instead of
   * waiting out its deadline. A local directory always answers.
   */
  default boolean reachable() {
    return true;
  }

  /** The store's file system cannot take a segment: {@code usable} bytes left, {@code needed}. */
  final class DiskFull extends IOException {
    final long usable;
    final long needed;

    DiskFull(long usable, long needed, Throwable cause) {
      super("the segment store's file system is full", cause);
      this.usable = usable;
      this.needed = needed;
    }
  }

  /** A stored segment whose size is not the size its manifest lists. */
  final class WrongSize extends IOException {
    WrongSize() {
      super("the retained segment file has the wrong size");
    }
  }

  /**
   * The store answered that it will not take the segment, and would answer the same again (an
   * object store's client error other than a timeout, a conflict or throttling: access denied, an
   * invalid request). Rerunning the query cannot help: its statement fails. {@code reason} as
   * {@link Unavailable}'s.
   */
  final class Refused extends IOException {
    final String reason;

    Refused(String reason, Throwable cause) {
      super("the segment store refused the request (" + reason + ")", cause);
      this.reason = reason;
    }
  }

  /**
   * The store could not answer: it was not reachable in time, or it failed the request. Nothing
   * is known about the segment; the same call may succeed later. {@code reason} is a short token
   * for the diagnostic ({@code connect}, {@code timeout}, an S3 error code, {@code open_files}),
   * never server text. A query's run also throws it, {@code open_files}, when a Table's file
   * could not be opened for want of a descriptor ({@link OpenFiles}): as transient, it runs again.
   */
  final class Unavailable extends IOException {
    final String reason;

    Unavailable(String reason, Throwable cause) {
      super("the segment store is unavailable (" + reason + ")", cause);
      this.reason = reason;
    }
  }
}
