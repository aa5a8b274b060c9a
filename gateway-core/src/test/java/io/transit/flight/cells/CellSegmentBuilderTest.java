package io.transit.flight.cells;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.proto.CellState;
import java.io.ByteArrayInputStream;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CellSegmentBuilderTest {
  static final byte I = CellFormat.code(CellState.CELL_INT64);
  static final byte U = CellFormat.code(CellState.CELL_UINT64);
  static final byte N = CellFormat.code(CellState.CELL_NULL);
  static final byte M = CellFormat.code(CellState.CELL_MISSING);
  static final byte C = CellFormat.code(CellState.CELL_CONFLICTED);

  final BufferAllocator allocator = new RootAllocator(16 << 20);

  @AfterEach
  void close() {
    assertEquals(0, allocator.getAllocatedMemory(), "leaked bytes");
    allocator.close();
  }

  /**
   * An allocator with room for one column of a two-column segment: the second column's refusal
   * leaves nothing charged, so the query's allocator still closes at zero bytes.
   */
  @Test
  void aColumnRefusedByTheAllocatorFreesTheColumnsBeforeIt() {
    long oneColumn;
    try (BufferAllocator measure = new RootAllocator();
        CellSegmentBuilder b = new CellSegmentBuilder(measure, List.of("a"), 4096)) {
      oneColumn = measure.getAllocatedMemory();
    }
    assertTrue(oneColumn > 0);
    try (BufferAllocator tight = new RootAllocator(oneColumn + oneColumn / 2)) {
      assertThrows(OutOfMemoryException.class,
          () -> new CellSegmentBuilder(tight, List.of("a", "b"), 4096));
      assertEquals(0, tight.getAllocatedMemory());
    }
  }

  /** Plain number columns: values copied bit for bit, a null is CELL_NULL with value 0. */
  @Test
  void copiesInt64AndUint64ColumnsFromAnOffset() throws Exception {
    try (BigIntVector ints = new BigIntVector("i", allocator);
        UInt8Vector uints = new UInt8Vector("u", allocator)) {
      ints.allocateNew(4);
      uints.allocateNew(4);
      long[] values = {99, Long.MIN_VALUE, -7, 12};
      for (int r = 0; r < 4; r++) {
        ints.set(r, values[r]);
        uints.set(r, values[r]);
      }
      ints.setNull(2); // -7 stays under the null: the segment must hold 0 there
      uints.setNull(2);
      ints.setValueCount(4);
      uints.setValueCount(4);
      byte[] segment = copy(List.of(ints, uints), 1, 3);
      assertCells(segment, 0, new byte[] {I, N, I}, new long[] {Long.MIN_VALUE, 0, 12});
      assertCells(segment, 1, new byte[] {U, N, U}, new long[] {Long.MIN_VALUE, 0, 12});
    }
  }

  /**
   * Struct cells: a state is copied with its value, but a number state without a number, or a
   * cell without a state, is CELL_MISSING (the adapter refuses it) — never a real 0.
   */
  @Test
  void aStructCellWithANumberStateButNoValueIsMissingNeverZero() throws Exception {
    try (StructVector cells = StructVector.empty("s", allocator)) {
      UInt1Vector states = cells.addOrGet(CellFormat.STATE,
          FieldType.nullable(new ArrowType.Int(8, false)), UInt1Vector.class);
      BigIntVector values = cells.addOrGet(CellFormat.VALUE,
          FieldType.nullable(new ArrowType.Int(64, true)), BigIntVector.class);
      cells.allocateNew();
      // Row 0 is skipped by the offset; rows 1..8 are copied.
      byte[] stateOf = {I, I, U, I, U, 0, N, C, N};
      Long[] valueOf = {1L, 5L, -1L, null, null, 7L, null, null, 3L};
      for (int r = 0; r < stateOf.length; r++) {
        cells.setIndexDefined(r);
        states.setSafe(r, stateOf[r]);
        // A null value keeps bytes under it (42): the segment must hold 0 there.
        values.setSafe(r, valueOf[r] == null ? 42L : valueOf[r]);
        if (valueOf[r] == null) {
          values.setNull(r);
        }
      }
      states.setNull(5); // a cell without a state
      cells.setNull(8); // a null struct
      states.setValueCount(stateOf.length);
      values.setValueCount(stateOf.length);
      cells.setValueCount(stateOf.length);

      byte[] segment = copy(List.of(cells), 1, 8);
      assertCells(segment, 0, new byte[] {I, U, M, M, M, N, C, N},
          new long[] {5, -1, 0, 0, 7, 0, 0, 0});
    }
  }

  /** The bounded encoding: the same bytes within the limit; beyond it only the exact size. */
  @Test
  void anEncodingPastTheLimitKeepsOnlyItsSize() throws Exception {
    long[] values = new long[1000];
    byte[] states = new byte[values.length];
    Arrays.fill(states, I);
    byte[] whole = CellSegmentBuilder.encode(List.of("v"), new long[][] {values},
        new byte[][] {states}, allocator);
    for (long limit : new long[] {whole.length, whole.length + 1, -1}) {
      CellSegmentBuilder.Encoded within = encode(values, states, limit);
      assertArrayEquals(whole, within.bytes(), "limit " + limit);
      assertEquals(whole.length, within.size());
    }
    for (long limit : new long[] {whole.length - 1, 0}) {
      CellSegmentBuilder.Encoded past = encode(values, states, limit);
      assertNull(past.bytes(), "limit " + limit);
      assertEquals(whole.length, past.size(), "the exact size, for the budget failure's facts");
    }
  }

  private CellSegmentBuilder.Encoded encode(long[] values, byte[] states, long limit)
      throws Exception {
    try (CellSegmentBuilder b = new CellSegmentBuilder(allocator, List.of("v"), values.length)) {
      b.reserve(values.length);
      for (int r = 0; r < values.length; r++) {
        b.set(0, CellState.forNumber(states[r]), values[r]);
        b.advance(1);
      }
      return b.encode(limit);
    }
  }

  private byte[] copy(List<FieldVector> sources, int from, int count) throws Exception {
    List<String> names = sources.stream().map(FieldVector::getName).toList();
    try (CellSegmentBuilder b = new CellSegmentBuilder(allocator, names, 1)) {
      b.reserve(count);
      for (int c = 0; c < sources.size(); c++) {
        b.copy(c, sources.get(c), from, count);
      }
      b.advance(count);
      return b.encode();
    }
  }

  /** Reads column {@code col} of an encoded segment back as stored: states and values. */
  private void assertCells(byte[] segment, int col, byte[] states, long[] values)
      throws Exception {
    try (ArrowStreamReader reader =
            new ArrowStreamReader(new ByteArrayInputStream(segment), allocator)) {
      assertTrue(reader.loadNextBatch());
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      assertEquals(states.length, root.getRowCount());
      StructVector cells = (StructVector) root.getVector(col);
      UInt1Vector s = cells.getChild(CellFormat.STATE, UInt1Vector.class);
      BigIntVector v = cells.getChild(CellFormat.VALUE, BigIntVector.class);
      for (int r = 0; r < states.length; r++) {
        assertEquals(states[r], s.get(r), "state of row " + r + " in column " + col);
        assertEquals(values[r], v.get(r), "value of row " + r + " in column " + col);
      }
    }
  }
}
