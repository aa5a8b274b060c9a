package io.transit.flight.cells;

import io.transit.flight.query.QueryCompiler;
import io.transit.flight.diagnostic.Fact;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.OutputColumn;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CellAdapterTest {
  static final byte I = CellFormat.code(CellState.CELL_INT64);
  static final byte U = CellFormat.code(CellState.CELL_UINT64);
  static final byte N = CellFormat.code(CellState.CELL_NULL);

  BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator(64 << 20);
  }

  @AfterEach
  void close() {
    assertEquals(0, allocator.getAllocatedMemory(), "leaked bytes");
    allocator.close();
  }

  static Schema schema(String name, boolean nullable) {
    return QueryCompiler.outputSchema(List.of(
        OutputColumn.newBuilder().setName(name).setNullable(nullable).build()));
  }

  byte[] segment(List<String> names, long[][] values, byte[][] states) {
    return CellSegmentBuilder.encode(names, values, states, allocator);
  }

  GatewayException failure(byte[] segment, Schema schema, Cause cause, String code) {
    GatewayException e = assertThrows(GatewayException.class,
        () -> CellAdapter.adapt(segment, schema, 100, allocator).close());
    assertEquals(cause, e.kind(), e.getMessage());
    assertEquals(code, e.code());
    assertEquals(0, allocator.getAllocatedMemory(), "leak on failure path");
    return e;
  }

  @Test
  void int64CellsTransferWhole() {
    long[] values = {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, 42};
    byte[] states = new byte[values.length];
    Arrays.fill(states, I);
    byte[] bytes = segment(List.of("a", "b"), new long[][] {values, values}, new byte[][] {states, states});
    Schema out = QueryCompiler.outputSchema(List.of(
        OutputColumn.newBuilder().setName("a").setNullable(false).build(),
        OutputColumn.newBuilder().setName("b").setNullable(true).build()));
    try (VectorSchemaRoot root = CellAdapter.adapt(bytes, out, allocator)) {
      assertEquals(out, root.getSchema());
      assertEquals(5, root.getRowCount());
      for (int c = 0; c < 2; c++) {
        BigIntVector v = (BigIntVector) root.getVector(c);
        assertEquals(0, v.getNullCount());
        for (int r = 0; r < values.length; r++) {
          assertEquals(values[r], v.get(r));
        }
      }
    }
  }

  @Test
  void nullUint64AndMixedStates() {
    long[] values = {5, 0, Long.MAX_VALUE, 7};
    byte[] states = {I, N, U, I};
    byte[] bytes = segment(List.of("s"), new long[][] {values}, new byte[][] {states});
    try (VectorSchemaRoot root = CellAdapter.adapt(bytes, schema("s", true), allocator)) {
      BigIntVector v = (BigIntVector) root.getVector(0);
      assertEquals(1, v.getNullCount());
      assertEquals(5L, v.getObject(0));
      assertNull(v.getObject(1));
      assertEquals(Long.MAX_VALUE, v.getObject(2));
      assertEquals(7L, v.getObject(3));
    }
  }

  @Test
  void emptySegment() {
    byte[] bytes = segment(List.of("c"), new long[][] {{}}, new byte[][] {{}});
    try (VectorSchemaRoot root = CellAdapter.adapt(bytes, schema("c", false), allocator)) {
      assertEquals(0, root.getRowCount());
    }
  }

  @Test
  void duplicateNames() {
    byte[] bytes = segment(List.of("x", "x"), new long[][] {{1}, {2}}, new byte[][] {{I}, {I}});
    Schema out = QueryCompiler.outputSchema(List.of(
        OutputColumn.newBuilder().setName("x").build(), OutputColumn.newBuilder().setName("x").build()));
    try (VectorSchemaRoot root = CellAdapter.adapt(bytes, out, allocator)) {
      assertEquals(1L, ((BigIntVector) root.getVector(0)).get(0));
      assertEquals(2L, ((BigIntVector) root.getVector(1)).get(0));
    }
  }

  @Test
  void uint64AboveInt64MaxIsOutOfRange() {
    byte[] bytes = segment(List.of("n"), new long[][] {{1, Long.MIN_VALUE}}, new byte[][] {{U, U}});
    GatewayException e = failure(bytes, schema("n", false), Cause.INTEGER_OUT_OF_RANGE,
        "flight.integer_out_of_range");
    assertEquals(Status.Code.UNIMPLEMENTED, e.kind().code());
    assertEquals(Map.of("column", Fact.text("column", "n"), "value", Fact.unsigned("value", Long.MIN_VALUE),
        "range", "[0, 9223372036854775807]"), e.facts());
    assertEquals(io.transit.flight.diagnostic.Stage.OUTPUT, e.stage());
    byte[] max = segment(List.of("n"), new long[][] {{-1}}, new byte[][] {{U}});
    assertEquals(Fact.unsigned("value", -1L),
        failure(max, schema("n", false), Cause.INTEGER_OUT_OF_RANGE, "flight.integer_out_of_range")
            .facts().get("value"));
  }

  @Test
  void missingConflictedMistypedAreCellStateFailures() {
    for (CellState s : List.of(CellState.CELL_MISSING, CellState.CELL_CONFLICTED, CellState.CELL_MISTYPED)) {
      byte[] bytes = segment(List.of("a", "b"), new long[][] {{1, 2}, {3, 0}},
          new byte[][] {{I, I}, {I, CellFormat.code(s)}});
      Schema out = QueryCompiler.outputSchema(List.of(
          OutputColumn.newBuilder().setName("a").build(), OutputColumn.newBuilder().setName("b").setNullable(true).build()));
      GatewayException e = failure(bytes, out, Cause.CELL_STATE, "query.cell_state");
      assertEquals(Status.Code.FAILED_PRECONDITION, e.kind().code());
      assertEquals(Map.of("column", Fact.text("column", "b"), "row", 101L, "state", s.name()), e.facts());
      assertEquals(io.transit.flight.diagnostic.Stage.OUTPUT, e.stage());
    }
  }

  @Test
  void nullInNonNullableColumnAndUnknownStateAreEvidence() {
    byte[] nul = segment(List.of("a"), new long[][] {{0}}, new byte[][] {{N}});
    failure(nul, schema("a", false), Cause.EVIDENCE, "query.evidence");
    byte[] unknown = segment(List.of("a"), new long[][] {{0}}, new byte[][] {{(byte) 99}});
    failure(unknown, schema("a", true), Cause.EVIDENCE, "query.evidence");
    byte[] unspecified = segment(List.of("a"), new long[][] {{0}}, new byte[][] {{0}});
    failure(unspecified, schema("a", true), Cause.EVIDENCE, "query.evidence");
  }

  @Test
  void corruptBytesAreEvidence() {
    byte[] good = segment(List.of("a"), new long[][] {{1, 2, 3}}, new byte[][] {{I, I, I}});
    Schema out = schema("a", false);
    GatewayException e = failure(new byte[] {1, 2, 3}, out, Cause.EVIDENCE, "query.evidence");
    assertEquals(Status.Code.DATA_LOSS, e.kind().code());
    failure(new byte[0], out, Cause.EVIDENCE, "query.evidence");
    failure(Arrays.copyOf(good, good.length - 8), out, Cause.EVIDENCE, "query.evidence");
    for (int cut : new int[] {good.length / 3, good.length / 2, good.length - 20}) {
      byte[] truncated = Arrays.copyOf(Arrays.copyOf(good, cut), cut + 8);
      System.arraycopy(new byte[] {-1, -1, -1, -1, 0, 0, 0, 0}, 0, truncated, cut, 8);
      failure(truncated, out, Cause.EVIDENCE, "query.evidence");
    }
    for (int i = 0; i < good.length - 8; i += 7) {
      byte[] flipped = good.clone();
      flipped[i] ^= 0x5a;
      try {
        CellAdapter.adapt(flipped, out, allocator).close();
      } catch (GatewayException x) {
        assertTrue(x.kind() == Cause.EVIDENCE || x.kind() == Cause.TRANSPORT, x.kind().name());
      }
      assertEquals(0, allocator.getAllocatedMemory(), "leak after flipping byte " + i);
    }
  }

  @Test
  void wrongSchemaIsEvidence() {
    byte[] bytes = segment(List.of("a", "b"), new long[][] {{1}, {2}}, new byte[][] {{I}, {I}});
    failure(bytes, schema("a", false), Cause.EVIDENCE, "query.evidence");
    Schema renamed = QueryCompiler.outputSchema(List.of(
        OutputColumn.newBuilder().setName("b").build(), OutputColumn.newBuilder().setName("a").build()));
    failure(bytes, renamed, Cause.EVIDENCE, "query.evidence");
  }

  @Test
  void twoBatchesAreEvidence() throws Exception {
    byte[] one = segment(List.of("a"), new long[][] {{1}}, new byte[][] {{I}});
    // A second copy of the batch message spliced before the end-of-stream marker.
    byte[] twice = twoBatchStream();
    failure(twice, schema("a", false), Cause.EVIDENCE, "query.evidence");
    byte[] trailing = Arrays.copyOf(one, one.length + one.length);
    System.arraycopy(one, 0, trailing, one.length, one.length);
    failure(trailing, schema("a", false), Cause.EVIDENCE, "query.evidence");
  }

  private byte[] twoBatchStream() throws Exception {
    try (VectorSchemaRoot root = VectorSchemaRoot.create(CellFormat.segmentSchema(List.of("a")), allocator)) {
      var cells = (org.apache.arrow.vector.complex.StructVector) root.getVector(0);
      cells.allocateNew();
      cells.getChild(CellFormat.STATE, org.apache.arrow.vector.UInt1Vector.class).setSafe(0, I);
      cells.getChild(CellFormat.VALUE, BigIntVector.class).setSafe(0, 1);
      cells.setIndexDefined(0);
      cells.getChild(CellFormat.STATE).setValueCount(1);
      cells.getChild(CellFormat.VALUE).setValueCount(1);
      root.setRowCount(1);
      var out = new java.io.ByteArrayOutputStream();
      try (var writer = new org.apache.arrow.vector.ipc.ArrowStreamWriter(root, null,
          java.nio.channels.Channels.newChannel(out))) {
        writer.start();
        writer.writeBatch();
        writer.writeBatch();
        writer.end();
      }
      return out.toByteArray();
    }
  }

  @Test
  void writerRoundTripsValuesBitForBit() {
    long[] values = {Long.MIN_VALUE, -7, 0, 9, Long.MAX_VALUE};
    byte[] states = {I, I, I, I, U};
    byte[] a = segment(List.of("v"), new long[][] {values}, new byte[][] {states});
    byte[] b = segment(List.of("v"), new long[][] {values}, new byte[][] {states});
    assertArrayEquals(a, b, "segment bytes are deterministic");
    try (VectorSchemaRoot root = CellAdapter.adapt(a, schema("v", false), allocator)) {
      BigIntVector v = (BigIntVector) root.getVector(0);
      for (int r = 0; r < values.length; r++) {
        assertEquals(values[r], v.get(r));
      }
    }
    assertThrows(IllegalArgumentException.class,
        () -> CellSegmentBuilder.encode(List.of("a"), new long[][] {{1}}, new byte[][] {{I, I}}, allocator));
  }

  @Test
  void everyStatePositionIsCheckedAcrossEightCellRuns() {
    // 37 rows: four whole eight-state words and a tail, so each position is seen once inside a
    // word that the fast path must not skip and once in the tail.
    int rows = 37;
    long[] values = new long[rows];
    Arrays.setAll(values, r -> r * 3L);
    byte m = CellFormat.code(CellState.CELL_MISSING);
    for (int p = 0; p < rows; p++) {
      byte[] states = new byte[rows];
      Arrays.fill(states, I);
      states[p] = N;
      byte[] withNull = segment(List.of("v"), new long[][] {values}, new byte[][] {states});
      try (VectorSchemaRoot root = CellAdapter.adapt(withNull, schema("v", true), allocator)) {
        BigIntVector v = (BigIntVector) root.getVector(0);
        assertEquals(1, v.getNullCount(), "position " + p);
        assertTrue(v.isNull(p), "position " + p);
        assertEquals(values[(p + 1) % rows], v.get((p + 1) % rows));
      }
      states[p] = m;
      byte[] withMissing = segment(List.of("v"), new long[][] {values}, new byte[][] {states});
      assertEquals(100L + p,
          failure(withMissing, schema("v", true), Cause.CELL_STATE, "query.cell_state")
              .facts().get("row"));
    }
  }

  @Test
  void aSegmentBufferIsAdaptedInPlaceAndOutlivesTheCallersReference() {
    long[] values = new long[4096];
    Arrays.setAll(values, r -> 5L + r);
    byte[] states = new byte[values.length];
    Arrays.fill(states, I);
    byte[] bytes = segment(List.of("v"), new long[][] {values}, new byte[][] {states});
    org.apache.arrow.memory.ArrowBuf buf = allocator.buffer(bytes.length);
    buf.setBytes(0, bytes);
    VectorSchemaRoot root;
    try (buf) {
      root = CellAdapter.adapt(buf, bytes.length, schema("v", false), 0, allocator);
      // Beyond the segment only validity bitmaps (512 bytes each) are new; a copy of the value
      // buffer alone would be 32 KiB.
      long extra = allocator.getAllocatedMemory() - buf.capacity();
      assertTrue(extra < 8 << 10, "the output shares the segment's memory: " + extra + " new bytes");
    }
    try (root) {
      assertTrue(allocator.getAllocatedMemory() > 0, "the root keeps the segment alive");
      BigIntVector v = (BigIntVector) root.getVector(0);
      for (int r = 0; r < values.length; r++) {
        assertEquals(values[r], v.get(r));
      }
    }
    // @AfterEach: zero bytes once the root is closed.
  }
}
