package io.transit.flight.nativequery.embedded;

import io.transit.flight.cells.CellSegmentBuilder;
import com.google.protobuf.ByteString;
import io.transit.flight.diagnostic.Budget;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.SegmentRef;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Cuts a query's cell rows into segments of the bundle's {@code rows_per_segment}, encodes and
 * stores each, and enforces the segment- and result-byte budgets as each segment is measured.
 *
 * <p>A result of at most {@link #INLINE_RESULT_BYTES} encoded bytes in all is kept in memory and
 * handed back by {@link #inline()} for the journal to store with the manifest in one commit (no
 * segment file, no file or directory fsync); the first segment that takes the result past it
 * sends the held segments and every later one to the {@link SegmentStore}. A result is therefore
 * either wholly inline or wholly in the store.
 *
 * <p>Confined to one query runner thread; owns the open {@link CellSegmentBuilder} (freed on
 * {@link #close()}) and the held segments' heap bytes.
 */
final class ResultWriter implements AutoCloseable {
  /**
   * The largest result, in encoded segment bytes, stored in the journal rather than in segment
   * files: 64 KiB keeps every one-row aggregate and small projection inline while a journal row
   * stays small next to SQLite's page cache.
   */
  static final long INLINE_RESULT_BYTES = 64 * 1024;

  private final BufferAllocator allocator;
  private final SegmentStore store;
  private final List<String> names;
  private final Budgets budgets;
  private final List<SegmentRef> segments = new ArrayList<>();
  private final long inlineLimit;
  private final Runnable beforeStoring;
  // The encoded segments held for the journal, in order; null once the result went to the store.
  private List<byte[]> held = new ArrayList<>();
  private CellSegmentBuilder current;
  private long totalBytes;
  private long totalRows;

  ResultWriter(BufferAllocator allocator, SegmentStore store, List<String> names, Budgets b) {
    this(allocator, store, names, b, INLINE_RESULT_BYTES, () -> {});
  }

  /**
   * As above with another inline limit (0: every segment goes to the store), and {@code
   * beforeStoring} run once on this thread right before the first segment goes to the store (an
   * early run waits there until its bundle is verified; it may throw to stop the result).
   */
  ResultWriter(BufferAllocator allocator, SegmentStore store, List<String> names, Budgets b,
      long inlineLimit, Runnable beforeStoring) {
    this.inlineLimit = inlineLimit;
    this.beforeStoring = beforeStoring;
    this.allocator = allocator;
    this.store = store;
    this.names = List.copyOf(names);
    this.budgets = b;
  }

  /** Rows the open segment can still take before it is full. */
  int room() {
    return budgets.getRowsPerSegment() - (current == null ? 0 : current.rows());
  }

  /**
   * The open segment, opened on first use with room for {@code rows} (the rows about to be
   * filled, at most {@link #room()}); fill at most {@link #room()} rows, then commit.
   */
  CellSegmentBuilder segment(int rows) {
    if (current == null) {
      // Sized for the rows at hand, not for rows_per_segment: a one-row aggregate allocates one
      // row, and a segment grows only if later batches fill it further.
      current = new CellSegmentBuilder(allocator, names,
          Math.max(1, Math.min(budgets.getRowsPerSegment(), rows)));
    }
    return current;
  }

  /** Records that {@code count} rows were filled into the open segment; flushes it when full. */
  void committed(int count) throws IOException {
    current.advance(count);
    totalRows += count;
    if (current.rows() == budgets.getRowsPerSegment()) {
      flush();
    }
  }

  /**
   * Stores the last partial segment; an empty result has no segments at all. Segments that went
   * to the store are durable when this returns; held ones are in {@link #inline()}.
   */
  List<SegmentRef> finish() throws IOException {
    if (current != null && current.rows() > 0) {
      flush();
    }
    if (held == null) {
      store.sync();
    }
    return List.copyOf(segments);
  }

  /** The result's segments when it stays inline (index order), else empty; after finish. */
  List<byte[]> inline() {
    return held == null ? List.of() : List.copyOf(held);
  }

  long totalRows() {
    return totalRows;
  }

  private void flush() throws IOException {
    CellSegmentBuilder.Encoded encoded;
    int rows = current.rows();
    try {
      encoded = current.encode(budgets.getMaxSegmentBytes());
    } finally {
      current.close();
      current = null;
    }
    if (encoded.bytes() == null) {
      throw exhausted("a result segment exceeds max_segment_bytes", "max_segment_bytes",
          budgets.getMaxSegmentBytes(), encoded.size());
    }
    byte[] bytes = encoded.bytes();
    totalBytes += bytes.length;
    if (Long.compareUnsigned(totalBytes, budgets.getMaxResultBytes()) > 0) {
      throw exhausted("the result exceeds max_result_bytes", "max_result_bytes",
          budgets.getMaxResultBytes(), totalBytes);
    }
    byte[] sha;
    if (held != null && totalBytes <= inlineLimit) {
      sha = Digests.sha256(bytes);
      held.add(bytes);
    } else {
      if (held != null) {
        beforeStoring.run();
        for (byte[] earlier : held) {
          store.write(earlier);
        }
        held = null;
      }
      sha = store.write(bytes);
    }
    segments.add(SegmentRef.newBuilder()
        .setRows(rows)
        .setBytes(bytes.length)
        .setSha256(ByteString.copyFrom(sha))
        .build());
  }

  /** A measured budget failure: the exceeded {@code bound}, its limit and what was required. */
  static GatewayException exhausted(String message, String bound, long limit, long required) {
    return QueryCode.BUDGET_EXHAUSTED.failure(message)
        .with("bound", bound)
        .with(Fact.unsigned("limit", limit))
        .with(Fact.unsigned("required", required))
        .withBudget(new Budget(bound, limit, required));
  }

  @Override
  public void close() {
    if (current != null) {
      current.close();
      current = null;
    }
  }
}
