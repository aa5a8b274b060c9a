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
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
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
    long[] original = {1, 2, 3};
    byte[] good = segment(List.of("a"), new long[][] {original}, new byte[][] {{I, I, I}});
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
    // Every byte but the end marker flipped in turn: evidence failure, or the original values
    // (a byte nothing reads: padding, flatbuffer slack), or — in the value buffer only — that one
    // value changed. Values are protected by the segment digest the caller checks, not here.
    int values = indexOf(good, longs(original));
    assertTrue(values > 0, "the value buffer is in the segment");
    int failed = 0;
    for (int i = 0; i < good.length - 8; i++) {
      byte[] flipped = good.clone();
      flipped[i] ^= 0x5a;
      long[] expected = original.clone();
      if (i >= values && i < values + 24) {
        expected[(i - values) / 8] ^= 0x5aL << (8 * ((i - values) % 8));
      }
      try (VectorSchemaRoot root = CellAdapter.adapt(flipped, out, allocator)) {
        BigIntVector v = (BigIntVector) root.getVector(0);
        assertEquals(3, root.getRowCount(), "byte " + i);
        for (int r = 0; r < 3; r++) {
          assertEquals(expected[r], v.get(r), "row " + r + " after flipping byte " + i);
        }
      } catch (GatewayException x) {
        assertEquals(Cause.EVIDENCE, x.kind(), "byte " + i + ": " + x.getMessage());
        failed++;
      }
      assertEquals(0, allocator.getAllocatedMemory(), "leak after flipping byte " + i);
    }
    assertTrue(failed > good.length / 4, failed + " of " + good.length + " flips refused");
  }

  /**
   * A message length prefix claiming more than the segment holds is refused before Arrow sizes a
   * heap buffer by it (up to 2 GiB: an OutOfMemoryError, or a heap spent on nothing).
   */
  @Test
  void aLengthPrefixPastTheSegmentIsEvidenceNotAnAllocation() {
    byte[] good = segment(List.of("a"), new long[][] {{1}}, new byte[][] {{I}});
    Schema out = schema("a", false);
    // The schema message: continuation marker, then its length.
    assertEquals(-1, readInt(good, 0));
    for (int claimed : new int[] {Integer.MAX_VALUE, 1 << 30, good.length}) {
      byte[] bad = good.clone();
      writeInt(bad, 4, claimed);
      failure(bad, out, Cause.EVIDENCE, "query.evidence");
    }
    byte[] negative = good.clone();
    writeInt(negative, 4, -2);
    failure(negative, out, Cause.EVIDENCE, "query.evidence");
    // The batch message: after the schema message (8-byte prefix and its metadata).
    int batchAt = 8 + readInt(good, 4);
    assertEquals(-1, readInt(good, batchAt));
    byte[] bad = good.clone();
    writeInt(bad, batchAt + 4, Integer.MAX_VALUE - 8);
    failure(bad, out, Cause.EVIDENCE, "query.evidence");
  }

  /**
   * Field node and batch lengths size the validity bitmaps the loader allocates: a corrupt one is
   * evidence failure before any allocation, not an allocator refusal (a memory-limit failure).
   */
  @Test
  void corruptRowCountsAreEvidenceNotAnAllocatorRefusal() throws Exception {
    Schema out = schema("a", false);
    int huge = 1 << 30; // a 128 MiB bitmap, past this test's 64 MiB allocator
    // One node (the value vector's) longer than the batch.
    failure(rewritten(3, node -> node == 2 ? huge : 3), out, Cause.EVIDENCE, "query.evidence");
    // Every node as long as the batch, and the batch longer than its body can hold.
    failure(rewritten(huge, node -> huge), out, Cause.EVIDENCE, "query.evidence");
    failure(rewritten(4, node -> 4), out, Cause.EVIDENCE, "query.evidence");
    // Unchanged lengths still convert.
    try (VectorSchemaRoot root = CellAdapter.adapt(rewritten(3, node -> 3), out, allocator)) {
      assertEquals(3, root.getRowCount());
      assertEquals(2L, ((BigIntVector) root.getVector(0)).get(1));
    }
  }

  /**
   * The three-row segment of column "a" re-encoded with the batch length and each field node's
   * length (nodes in order: struct, state, value) replaced; buffers as they were.
   */
  private byte[] rewritten(int batchLength, IntUnaryOperator nodeLength) throws Exception {
    byte[] good = segment(List.of("a"), new long[][] {{1, 2, 3}}, new byte[][] {{I, I, I}});
    var bytes = new ByteArrayOutputStream();
    try (var reader = new ArrowStreamReader(new ByteArrayInputStream(good), allocator)) {
      assertTrue(reader.loadNextBatch());
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      try (var batch = new VectorUnloader(root).getRecordBatch()) {
        List<ArrowFieldNode> nodes = new ArrayList<>();
        for (int n = 0; n < batch.getNodes().size(); n++) {
          nodes.add(new ArrowFieldNode(nodeLength.applyAsInt(n),
              batch.getNodes().get(n).getNullCount()));
        }
        try (var changed = new ArrowRecordBatch(batchLength, nodes, batch.getBuffers())) {
          var channel = new WriteChannel(Channels.newChannel(bytes));
          MessageSerializer.serialize(channel, root.getSchema());
          MessageSerializer.serialize(channel, changed);
          ArrowStreamWriter.writeEndOfStream(channel, IpcOption.DEFAULT);
        }
      }
    }
    return bytes.toByteArray();
  }

  private static byte[] longs(long[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 8)
        .order(ByteOrder.LITTLE_ENDIAN);
    for (long v : values) {
      b.putLong(v);
    }
    return b.array();
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
        return i;
      }
    }
    return -1;
  }

  private static int readInt(byte[] b, int at) {
    return ByteBuffer.wrap(b, at, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
  }

  private static void writeInt(byte[] b, int at, int value) {
    ByteBuffer.wrap(b, at, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(value);
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

  /**
   * What the in-place javadoc says: Arrow's loader keeps the segment's own (all-set) validity
   * bitmaps, so a null cell's bit is cleared in the segment's memory — one byte here, nothing
   * else written.
   */
  @Test
  void aNullCellIsClearedInTheSegmentsOwnValidityBitmap() {
    byte[] bytes = segment(List.of("v"), new long[][] {{1, 2, 3, 4}}, new byte[][] {{I, N, I, N}});
    byte[] after = new byte[bytes.length];
    try (org.apache.arrow.memory.ArrowBuf buf = allocator.buffer(bytes.length)) {
      buf.setBytes(0, bytes);
      try (VectorSchemaRoot root =
          CellAdapter.adapt(buf, bytes.length, schema("v", true), 0, allocator)) {
        assertEquals(2, root.getVector(0).getNullCount());
        buf.getBytes(0, after);
      }
    }
    int changed = 0;
    for (int i = 0; i < bytes.length; i++) {
      if (after[i] != bytes[i]) {
        changed++;
        assertEquals(0b0101, after[i], "validity of rows 0-3: 1 and 3 null");
        assertEquals(0b1111, bytes[i]);
      }
    }
    assertEquals(1, changed);
  }
}
