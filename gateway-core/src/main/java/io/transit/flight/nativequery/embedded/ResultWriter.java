package io.transit.flight.nativequery.embedded;

import io.transit.flight.cells.CellSegmentBuilder;
import com.google.protobuf.ByteString;
import io.transit.flight.diagnostic.Budget;
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
 * Confined to one query runner thread; owns the open {@link CellSegmentBuilder} and frees it on
 * {@link #close()}.
 */
final class ResultWriter implements AutoCloseable {
  private final BufferAllocator allocator;
  private final SegmentStore store;
  private final List<String> names;
  private final Budgets budgets;
  private final List<SegmentRef> segments = new ArrayList<>();
  private CellSegmentBuilder current;
  private long totalBytes;
  private long totalRows;

  ResultWriter(BufferAllocator allocator, SegmentStore store, List<String> names, Budgets b) {
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

  /** Stores the last partial segment; an empty result has no segments at all. */
  List<SegmentRef> finish() throws IOException {
    if (current != null && current.rows() > 0) {
      flush();
    }
    if (!segments.isEmpty()) {
      store.sync();
    }
    return List.copyOf(segments);
  }

  long totalRows() {
    return totalRows;
  }

  private void flush() throws IOException {
    byte[] bytes;
    int rows = current.rows();
    try {
      bytes = current.encode();
    } finally {
      current.close();
      current = null;
    }
    if (Long.compareUnsigned(bytes.length, budgets.getMaxSegmentBytes()) > 0) {
      throw exhausted("a result segment exceeds max_segment_bytes", "max_segment_bytes",
          budgets.getMaxSegmentBytes(), bytes.length);
    }
    totalBytes += bytes.length;
    if (Long.compareUnsigned(totalBytes, budgets.getMaxResultBytes()) > 0) {
      throw exhausted("the result exceeds max_result_bytes", "max_result_bytes",
          budgets.getMaxResultBytes(), totalBytes);
    }
    byte[] sha = store.write(bytes);
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
