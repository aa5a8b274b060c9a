package io.transit.flight.cells;

import io.transit.flight.proto.CellState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;

/**
 * The one encoder of the {@link CellFormat}: builds one retained segment, cell columns filled
 * from exported Arrow vectors (int64 and uint64 values copied buffer-wise, states set per row),
 * from single cells (aggregates), or from plain arrays ({@link #encode(List, long[][], byte[][],
 * BufferAllocator)}, for tests and benchmarks), then encoded as one IPC stream with exactly one
 * batch. The engine retains its results with it.
 *
 * <p>Confined to the thread that created it (the engine's query runner). It owns its vectors
 * (allocated from the given allocator) and frees them in {@link #close()}; source vectors stay
 * the caller's.
 */
public final class CellSegmentBuilder implements AutoCloseable {
  private static final byte INT64 = CellFormat.code(CellState.CELL_INT64);
  private static final byte UINT64 = CellFormat.code(CellState.CELL_UINT64);

  private final VectorSchemaRoot root;
  private final StructVector[] cells;
  private final UInt1Vector[] states;
  private final BigIntVector[] values;
  private int rows;

  public CellSegmentBuilder(BufferAllocator allocator, List<String> names, int initialRows) {
    root = VectorSchemaRoot.create(CellFormat.segmentSchema(names), allocator);
    int n = names.size();
    cells = new StructVector[n];
    states = new UInt1Vector[n];
    values = new BigIntVector[n];
    try {
      for (int i = 0; i < n; i++) {
        cells[i] = (StructVector) root.getVector(i);
        states[i] = cells[i].getChild(CellFormat.STATE, UInt1Vector.class);
        values[i] = cells[i].getChild(CellFormat.VALUE, BigIntVector.class);
        cells[i].setInitialCapacity(Math.max(1, initialRows));
        cells[i].allocateNew();
      }
    } catch (RuntimeException e) {
      // A column refused by the allocator frees only itself; the columns before it would stay
      // charged to the query's allocator, and no caller holds a builder to close.
      root.close();
      throw e;
    }
  }

  public int rows() {
    return rows;
  }

  /** Makes room for {@code count} more rows in every column. */
  public void reserve(int count) {
    long need = (long) rows + count;
    for (int c = 0; c < cells.length; c++) {
      while (cells[c].getValueCapacity() < need || states[c].getValueCapacity() < need
          || values[c].getValueCapacity() < need) {
        cells[c].reAlloc();
        if (states[c].getValueCapacity() < need) {
          states[c].reAlloc();
        }
        if (values[c].getValueCapacity() < need) {
          values[c].reAlloc();
        }
      }
    }
  }

  /**
   * Copies {@code count} rows starting at {@code from} of an exported source column into column
   * {@code col} at the current end; call {@link #reserve} first and {@link #advance} after all
   * columns are copied. Sources: BIGINT, UBIGINT or STRUCT(state UTINYINT, value BIGINT). A null
   * number is {@code CELL_NULL}; a struct cell with no state, or with an int64 or uint64 state and
   * no value, is {@code CELL_MISSING} (the adapter refuses it; docs/queries.md, note ²).
   */
  public void copy(int col, FieldVector source, int from, int count) {
    BigIntVector dst = values[col];
    if (source instanceof BigIntVector || source instanceof UInt8Vector) {
      BaseFixedWidthVector src = (BaseFixedWidthVector) source;
      dst.getDataBuffer().setBytes((long) rows * 8, src.getDataBuffer(), (long) from * 8,
          (long) count * 8);
      byte valid = CellFormat.code(
          source instanceof BigIntVector ? CellState.CELL_INT64 : CellState.CELL_UINT64);
      for (int i = 0; i < count; i++) {
        boolean isNull = src.isNull(from + i);
        mark(col, rows + i, isNull ? CellFormat.code(CellState.CELL_NULL) : valid);
        if (isNull) {
          dst.getDataBuffer().setLong((long) (rows + i) * 8, 0L);
        }
      }
    } else if (source instanceof StructVector struct) {
      UInt1Vector srcState = struct.getChild(CellFormat.STATE, UInt1Vector.class);
      BigIntVector srcValue = struct.getChild(CellFormat.VALUE, BigIntVector.class);
      dst.getDataBuffer().setBytes((long) rows * 8, srcValue.getDataBuffer(), (long) from * 8,
          (long) count * 8);
      for (int i = 0; i < count; i++) {
        int s = from + i;
        byte state;
        if (struct.isNull(s)) {
          state = CellFormat.code(CellState.CELL_NULL);
        } else if (srcState.isNull(s)) {
          // A stored cell without a state is not a value: report it, never coerce it.
          state = CellFormat.code(CellState.CELL_MISSING);
        } else {
          state = srcState.get(s);
          if (srcValue.isNull(s) && (state == INT64 || state == UINT64)) {
            // A number state with no number: copied as is it would read back as a real 0.
            state = CellFormat.code(CellState.CELL_MISSING);
          }
        }
        mark(col, rows + i, state);
        if (struct.isNull(s) || srcValue.isNull(s)) {
          dst.getDataBuffer().setLong((long) (rows + i) * 8, 0L);
        }
      }
    } else {
      throw new IllegalStateException("column " + col + ": unexpected exported vector "
          + source.getClass().getSimpleName());
    }
  }

  /** Sets one cell of the current end row (aggregates); {@link #advance} after the row. */
  public void set(int col, CellState state, long value) {
    set(col, CellFormat.code(state), value);
  }

  /** As {@link #set(int, CellState, long)} with the state's wire code, which is not checked. */
  private void set(int col, byte state, long value) {
    mark(col, rows, state);
    values[col].getDataBuffer().setLong((long) rows * 8, value);
  }

  public void advance(int count) {
    rows += count;
  }

  private void mark(int col, int row, byte state) {
    states[col].getDataBuffer().setByte(row, state);
  }

  /** Every cell is defined: sets the validity bits of rows [0, rows) of every vector at once. */
  private void defineAll() {
    for (int c = 0; c < cells.length; c++) {
      for (org.apache.arrow.vector.FieldVector v : List.of(cells[c], states[c], values[c])) {
        ArrowBuf validity = v.getValidityBuffer();
        int full = rows / 8;
        validity.setOne(0, full);
        if (rows % 8 != 0) {
          validity.setByte(full, (1 << (rows % 8)) - 1);
        }
      }
    }
  }

  /** The segment's IPC stream bytes: schema, one batch of {@link #rows()} rows, end marker. */
  public byte[] encode() throws IOException {
    return encode(-1L).bytes();
  }

  /**
   * One encoding: its bytes, or null when it came to more than the limit it was made under;
   * {@code size} is its exact length either way (the budget failure names it).
   */
  public record Encoded(byte[] bytes, long size) {}

  /**
   * As {@link #encode()}, holding at most {@code maxBytes} (unsigned) of it on the heap: past
   * that the rest is only counted, so a segment over {@code max_segment_bytes} is measured
   * without being kept whole (with the stream's growth and final copy, about three times its
   * size) just to be refused.
   */
  public Encoded encode(long maxBytes) throws IOException {
    defineAll();
    root.setRowCount(rows);
    BoundedBytes out = new BoundedBytes(maxBytes);
    try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
      writer.start();
      writer.writeBatch();
      writer.end();
    }
    return new Encoded(out.held == null ? null : out.held.toByteArray(), out.size);
  }

  /** Keeps what is written while it is within the limit; counts it all. */
  private static final class BoundedBytes extends OutputStream {
    private final long max;
    private ByteArrayOutputStream held = new ByteArrayOutputStream();
    private long size;

    BoundedBytes(long max) {
      this.max = max;
    }

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) {
      size += len;
      if (held != null && Long.compareUnsigned(size, max) > 0) {
        held = null; // over the limit: its bytes are not needed
      }
      if (held != null) {
        held.write(b, off, len);
      }
    }
  }

  @Override
  public void close() {
    root.close();
  }

  /**
   * Encodes one segment from plain arrays. State codes are written as given, unchecked, so tests
   * can also encode states the adapter must refuse.
   *
   * @param names the output column names, in order
   * @param values {@code values[column][row]}: the int64 value, the unsigned bits for
   *     {@code CELL_UINT64}, 0 for other states
   * @param states {@code states[column][row]}: {@link CellFormat#code} of each cell's state
   * @param allocator where the transient vectors live; freed before this returns, on every path
   * @return the IPC stream bytes (schema, one batch, end-of-stream marker), the caller's
   */
  public static byte[] encode(
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
    try (CellSegmentBuilder b = new CellSegmentBuilder(allocator, names, rows)) {
      b.reserve(rows);
      for (int r = 0; r < rows; r++) {
        for (int c = 0; c < names.size(); c++) {
          b.set(c, states[c][r], values[c][r]);
        }
        b.advance(1);
      }
      return b.encode();
    } catch (IOException e) {
      // The builder writes to memory, which does not fail.
      throw new UncheckedIOException(e);
    }
  }
}
