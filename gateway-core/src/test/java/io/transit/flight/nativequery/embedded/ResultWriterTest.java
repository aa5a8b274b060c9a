package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.cells.CellFormat;
import io.transit.flight.cells.CellSegmentBuilder;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.CellState;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/** The segment budget: measured exactly, refused before the segment is kept or stored. */
class ResultWriterTest {
  static final int ROWS = 1000;

  @Test
  void aSegmentOverMaxSegmentBytesIsRefusedWithItsExactSize() throws Exception {
    try (BufferAllocator allocator = new RootAllocator(16 << 20)) {
      long[] values = new long[ROWS];
      Arrays.setAll(values, r -> r * 7L);
      byte[] states = new byte[ROWS];
      Arrays.fill(states, CellFormat.code(CellState.CELL_INT64));
      long size = CellSegmentBuilder.encode(List.of("v"), new long[][] {values},
          new byte[][] {states}, allocator).length;
      Budgets budgets = Budgets.newBuilder().setRowsPerSegment(ROWS)
          .setMaxSegmentBytes(size - 1).setMaxResultBytes(1L << 30).setMaxResultRows(1L << 30)
          .build();

      // No store: a refused segment must never reach one.
      try (ResultWriter w = new ResultWriter(allocator, null, List.of("v"), budgets)) {
        GatewayException e = assertThrows(GatewayException.class, () -> write(w, values));
        assertEquals(QueryCode.BUDGET_EXHAUSTED, e.queryCode());
        assertEquals("max_segment_bytes", e.facts().get("bound"));
        assertEquals(Fact.unsigned("limit", size - 1), e.facts().get("limit"));
        assertEquals(Fact.unsigned("required", size), e.facts().get("required"));
      }
      assertEquals(0, allocator.getAllocatedMemory(), "the refused segment's vectors are freed");

      // At exactly the limit it is kept, byte for byte the segment measured above.
      Budgets exact = budgets.toBuilder().setMaxSegmentBytes(size).build();
      try (ResultWriter w = new ResultWriter(allocator, null, List.of("v"), exact)) {
        write(w, values);
        assertEquals(1, w.finish().size());
        assertEquals(size, w.inline().get(0).length);
      }
      assertEquals(0, allocator.getAllocatedMemory());
    }
  }

  /** One int64 cell a row, committed row by row as a query runner does. */
  private static void write(ResultWriter w, long[] values) throws IOException {
    for (long v : values) {
      CellSegmentBuilder b = w.segment(1);
      b.reserve(1);
      b.set(0, CellState.CELL_INT64, v);
      w.committed(1);
    }
  }
}
