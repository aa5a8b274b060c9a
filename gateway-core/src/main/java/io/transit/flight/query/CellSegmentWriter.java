package io.transit.flight.query;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;

/**
 * Encodes one retained segment in the {@link CellFormat}: an Arrow IPC stream holding one record
 * batch of cell structs. Used by the native engine to retain results and by tests to build
 * segments. Stateless; any thread. The vectors it builds are allocated in the caller's allocator
 * and freed before {@link #write} returns, on every path; the returned bytes are the caller's.
 */
public final class CellSegmentWriter {
  private CellSegmentWriter() {}

  /**
   * Writes one segment.
   *
   * @param names the output column names, in order
   * @param values {@code values[column][row]}: the int64 value, the unsigned bits for
   *     {@code CELL_UINT64}, 0 for other states
   * @param states {@code states[column][row]}: {@link CellFormat#code} of each cell's state
   * @param allocator where the transient Arrow vectors live
   * @return the IPC stream bytes (schema, one batch, end-of-stream marker)
   */
  public static byte[] write(
      List<String> names, long[][] values, byte[][] states, BufferAllocator allocator) {
    if (values.length != names.size() || states.length != names.size()) {
      throw new IllegalArgumentException("columns: names " + names.size() + ", values "
          + values.length + ", states " + states.length + " (expected: equal)");
    }
    int rows = names.isEmpty() ? 0 : values[0].length;
    for (int c = 0; c < names.size(); c++) {
      if (values[c].length != rows || states[c].length != rows) {
        throw new IllegalArgumentException("column " + c + ": values " + values[c].length
            + ", states " + states[c].length + " (expected: " + rows + " rows)");
      }
    }
    try (VectorSchemaRoot root = VectorSchemaRoot.create(CellFormat.segmentSchema(names), allocator)) {
      for (int c = 0; c < names.size(); c++) {
        fill((StructVector) root.getVector(c), values[c], states[c]);
      }
      root.setRowCount(rows);
      ByteArrayOutputStream out = new ByteArrayOutputStream(64 + rows * names.size() * 9);
      try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
        writer.start();
        writer.writeBatch();
        writer.end();
      }
      return out.toByteArray();
    } catch (IOException e) {
      // A ByteArrayOutputStream does not fail; this is unreachable short of a JDK defect.
      throw new UncheckedIOException(e);
    }
  }

  private static void fill(StructVector cells, long[] values, byte[] states) {
    int rows = values.length;
    cells.setInitialCapacity(rows);
    cells.allocateNew();
    UInt1Vector state = cells.getChild(CellFormat.STATE, UInt1Vector.class);
    BigIntVector value = cells.getChild(CellFormat.VALUE, BigIntVector.class);
    state.allocateNew(rows);
    value.allocateNew(rows);
    for (int r = 0; r < rows; r++) {
      state.set(r, states[r]);
      value.set(r, values[r]);
      cells.setIndexDefined(r);
    }
    state.setValueCount(rows);
    value.setValueCount(rows);
    cells.setValueCount(rows);
  }
}
