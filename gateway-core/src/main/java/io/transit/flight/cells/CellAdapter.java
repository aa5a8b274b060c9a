package io.transit.flight.cells;

import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.CellState;
import io.transit.flight.query.SafeText;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.ValueVectorUtility;

/**
 * Turns one retained segment ({@link CellFormat}; bytes already digest-verified by the caller)
 * into a plain Arrow int64 batch with the result's output schema.
 *
 * <p>Per cell: {@code CELL_INT64} → the value; {@code CELL_UINT64} → the value when it is at
 * most int64 max, else {@code flight.integer_out_of_range}; {@code CELL_NULL} → an Arrow null
 * (only in a nullable column, else evidence failure); missing, conflicted and mistyped cells →
 * {@code query.cell_state} (never coerced to null); any other state, and any IPC or schema defect,
 * → {@code query.evidence}. Columns are checked in order, rows in order within a column; the first
 * failing cell is reported.
 *
 * <p>No cell is copied or boxed: the batch body is a slice of the segment buffer, and every valid
 * cell already holds its int64 bits (null cells hold 0 and are masked by validity), so each
 * column's value buffer goes to the output whole, and validity is built from the states in the
 * same pass that checks them.
 *
 * <p>Buffers: everything is allocated in the caller's allocator. The decoded batch and the cell
 * vectors are closed before {@code adapt} returns, on every path; the returned root retains the
 * slices of the segment it uses and is owned by the caller, who must close it (e.g. by handing it
 * to the channel, which then owns it). Stateless; any thread, one call per segment.
 */
public final class CellAdapter {
  private static final int INT64_STATE = CellState.CELL_INT64_VALUE;
  private static final int UINT64_STATE = CellState.CELL_UINT64_VALUE;
  private static final int NULL_STATE = CellState.CELL_NULL_VALUE;
  /** Eight {@code CELL_INT64} state bytes read as one long (the value is the same either order). */
  private static final long ALL_INT64 = 0x0101010101010101L * INT64_STATE;
  private static final byte[] END_OF_STREAM = {-1, -1, -1, -1, 0, 0, 0, 0};

  private CellAdapter() {}

  /**
   * Converts one segment held on the heap: copies it into one buffer of {@code allocator} and
   * converts that ({@link #adapt(ArrowBuf, long, Schema, long, BufferAllocator)}).
   *
   * @param segment the verified segment bytes (the caller keeps them; they are not retained)
   * @param output the result's output schema ({@code QueryCompiler.outputSchema}): int64 fields
   * @param firstRow the result row number of the segment's first row, for failure facts
   * @param allocator where the copy and the returned vectors are allocated
   * @return a root with {@code output}'s fields; ownership passes to the caller
   * @throws GatewayException EVIDENCE, CELL_STATE or INTEGER_OUT_OF_RANGE
   * @throws OutOfMemoryException when {@code allocator} refuses memory
   */
  public static VectorSchemaRoot adapt(
      byte[] segment, Schema output, long firstRow, BufferAllocator allocator) {
    try (ArrowBuf copy = allocator.buffer(segment.length)) {
      copy.setBytes(0, segment);
      return adapt(copy, segment.length, output, firstRow, allocator);
    }
  }

  /**
   * Converts one segment in place: the batch body is sliced out of {@code segment} rather than
   * copied, and each column's int64 value buffer is handed to the output unchanged, so the
   * returned root holds a reference to {@code segment}'s memory until the root is closed. The
   * segment's bytes are written too: Arrow's loader keeps the segment's own all-set validity
   * bitmaps, so the bits of null cells are cleared in place (digest checks come before this).
   *
   * @param segment the verified segment bytes in {@code [0, length)}; the caller keeps its own
   *     reference and closes it whenever it likes — the returned root retains what it uses
   * @param length the segment's length in bytes
   * @param output the result's output schema ({@code QueryCompiler.outputSchema}): int64 fields
   * @param firstRow the result row number of the segment's first row, for failure facts
   * @param allocator where the decoded cell vectors and the returned vectors are allocated
   * @return a root with {@code output}'s fields; ownership passes to the caller
   * @throws GatewayException EVIDENCE, CELL_STATE or INTEGER_OUT_OF_RANGE
   * @throws OutOfMemoryException when {@code allocator} refuses memory
   */
  public static VectorSchemaRoot adapt(
      ArrowBuf segment, long length, Schema output, long firstRow, BufferAllocator allocator) {
    List<String> names = new ArrayList<>(output.getFields().size());
    for (Field f : output.getFields()) {
      if (!(f.getType() instanceof ArrowType.Int t) || t.getBitWidth() != 64 || !t.getIsSigned()) {
        throw new IllegalArgumentException("output field " + f.getName() + " (expected: int64)");
      }
      names.add(f.getName());
    }
    if (length < 0 || length > segment.capacity() || length > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("segment length " + length);
    }
    if (!endsWithEndOfStream(segment, length)) {
      throw evidence("segment is not a complete Arrow IPC stream");
    }
    Schema expected = CellFormat.segmentSchema(names);
    BufferChannel in = new BufferChannel(segment.nioBuffer(0, (int) length));
    ReadChannel channel = new ReadChannel(in);
    // Messages are read one by one here rather than through ArrowStreamReader, which leaks a
    // message body when a batch header has an unexpected type (Arrow Java 18.3).
    try {
      MessageMetadataResult schemaMessage = readMessage(in, channel);
      if (schemaMessage == null || schemaMessage.headerType() != MessageHeader.Schema
          || schemaMessage.getMessageBodyLength() != 0) {
        throw evidence("segment does not start with a schema");
      }
      Schema actual = MessageSerializer.deserializeSchema(schemaMessage);
      if (!actual.getFields().equals(expected.getFields())
          || !actual.getCustomMetadata().isEmpty()) {
        throw evidence("segment schema does not match the result columns");
      }
      MessageMetadataResult batchMessage = readMessage(in, channel);
      if (batchMessage == null || batchMessage.headerType() != MessageHeader.RecordBatch) {
        throw evidence("segment has no record batch");
      }
      long bodyLength = batchMessage.getMessageBodyLength();
      if (bodyLength < 0 || bodyLength > in.remaining()) {
        throw evidence("segment batch body exceeds the segment");
      }
      ArrowBuf body = segment.slice(in.position(), bodyLength);
      in.skip(bodyLength);
      // The slice shares the segment's reference count; deserializeRecordBatch releases one
      // reference of it once the batch holds its own, so take that one here.
      body.getReferenceManager().retain();
      ArrowRecordBatch batch;
      try {
        batch = MessageSerializer.deserializeRecordBatch(batchMessage, body);
      } catch (IOException | RuntimeException e) {
        body.getReferenceManager().release();
        throw e;
      }
      VectorSchemaRoot result;
      try (batch;
          VectorSchemaRoot cells = VectorSchemaRoot.create(expected, allocator)) {
        checkLengths(batch, bodyLength, !names.isEmpty());
        new VectorLoader(cells).load(batch);
        ValueVectorUtility.validateFull(cells);
        result = convert(cells, output, firstRow, allocator);
      }
      try {
        if (readMessage(in, channel) != null || in.remaining() != 0) {
          throw evidence("segment has more than one record batch");
        }
      } catch (IOException | RuntimeException e) {
        result.close();
        throw e;
      }
      return result;
    } catch (GatewayException e) {
      throw e;
    } catch (OutOfMemoryException e) {
      // A configured allocator limit, not bad evidence: the caller knows which limits to name.
      throw e;
    } catch (Exception e) {
      // IOException, Arrow validation failures and malformed-buffer runtime errors all mean the
      // retained bytes are not the evidence they claim to be.
      throw evidence("segment is not valid Arrow IPC", e);
    }
  }

  /**
   * Reads the next message header after checking its length prefix against the bytes left: Arrow
   * allocates a heap buffer of the prefix's size before reading it, so a corrupt prefix would ask
   * for up to 2 GiB (an OutOfMemoryError, no definite status) where it is plain evidence failure.
   */
  private static MessageMetadataResult readMessage(BufferChannel in, ReadChannel channel)
      throws IOException {
    if (!in.nextMessageFits()) {
      throw evidence("segment message length exceeds the segment");
    }
    return MessageSerializer.readMessage(channel);
  }

  /**
   * Loading allocates a validity bitmap per field node sized by the node's length, so lengths are
   * checked first: every node as long as the batch (the segment's cells are all defined), and the
   * batch no longer than its body holds (eight value bytes a row in each column). A corrupt length
   * is then evidence failure, not an allocation the caller would report as a memory limit.
   */
  private static void checkLengths(ArrowRecordBatch batch, long bodyLength, boolean anyColumn) {
    long rows = batch.getLength();
    if (rows < 0 || (anyColumn && rows > bodyLength / BigIntVector.TYPE_WIDTH)) {
      throw evidence("segment batch length exceeds its body");
    }
    for (ArrowFieldNode node : batch.getNodes()) {
      if (node.getLength() != rows) {
        throw evidence("segment cell vector length differs from the batch length");
      }
    }
  }

  /** Builds the output root from decoded cells; on failure frees whatever it built. */
  private static VectorSchemaRoot convert(
      VectorSchemaRoot cells, Schema output, long firstRow, BufferAllocator allocator) {
    int rows = cells.getRowCount();
    List<FieldVector> vectors = new ArrayList<>(output.getFields().size());
    try {
      for (int c = 0; c < output.getFields().size(); c++) {
        vectors.add(column((StructVector) cells.getVector(c), output.getFields().get(c), rows,
            firstRow, allocator));
      }
      VectorSchemaRoot result = new VectorSchemaRoot(output.getFields(), vectors, rows);
      vectors = List.of();
      return result;
    } finally {
      vectors.forEach(FieldVector::close);
    }
  }

  /** {@link #adapt(byte[], Schema, long, BufferAllocator)} for a segment that starts at row 0. */
  public static VectorSchemaRoot adapt(byte[] segment, Schema output, BufferAllocator allocator) {
    return adapt(segment, output, 0, allocator);
  }

  private static BigIntVector column(
      StructVector cells, Field field, int rows, long firstRow, BufferAllocator allocator) {
    UInt1Vector states = cells.getChild(CellFormat.STATE, UInt1Vector.class);
    BigIntVector values = cells.getChild(CellFormat.VALUE, BigIntVector.class);
    if (cells.getNullCount() != 0 || states.getNullCount() != 0 || values.getNullCount() != 0
        || states.getValueCount() < rows || values.getValueCount() < rows) {
      throw evidence("segment has null or short cell vectors");
    }
    BigIntVector out = new BigIntVector(field, allocator);
    try {
      // Whole-buffer transfer: the cell vector's value and (all-set) validity buffers become the
      // output's without copying.
      values.makeTransferPair(out).transfer();
      ArrowBuf stateBuf = states.getDataBuffer();
      ArrowBuf valueBuf = out.getDataBuffer();
      ArrowBuf validity = out.getValidityBuffer();
      int r = 0;
      while (r < rows) {
        // Eight states per read: a run of plain int64 cells (the common case) costs one compare.
        if (rows - r >= Long.BYTES && stateBuf.getLong(r) == ALL_INT64) {
          r += Long.BYTES;
          continue;
        }
        int state = stateBuf.getByte(r) & 0xff;
        if (state == UINT64_STATE) {
          long bits = valueBuf.getLong((long) r * BigIntVector.TYPE_WIDTH);
          if (bits < 0) {
            throw outOfRange(field.getName(), bits);
          }
        } else if (state == NULL_STATE && field.isNullable()) {
          BitVectorHelper.unsetBit(validity, r);
        } else if (state != INT64_STATE) {
          throw badCell(field.getName(), firstRow + r, state);
        }
        r++;
      }
      out.setValueCount(rows);
      return out;
    } catch (RuntimeException e) {
      out.close();
      throw e;
    }
  }

  private static GatewayException badCell(String column, long row, int state) {
    CellState s = CellState.forNumber(state);
    if (s == CellState.CELL_MISSING || s == CellState.CELL_CONFLICTED
        || s == CellState.CELL_MISTYPED) {
      return SafeText.failure(QueryCode.CELL_STATE, "cell in column "
              + SafeText.ident(column) + " row " + row + " is " + s.name())
          .with(SafeText.fact("column", column))
          .with("row", row)
          .with("state", s.name())
          .at(Stage.OUTPUT);
    }
    String what = s == CellState.CELL_NULL ? "null cell in non-nullable column "
        : "unknown cell state " + state + " in column ";
    return evidence(what + SafeText.ident(column))
        .with(SafeText.fact("column", column))
        .with("row", row);
  }

  private static GatewayException outOfRange(String column, long bits) {
    String value = Long.toUnsignedString(bits);
    return SafeText.failure(QueryCode.INTEGER_OUT_OF_RANGE, "value " + value
            + " in column " + SafeText.ident(column) + " exceeds int64 maximum")
        .with(SafeText.fact("column", column))
        .with(Fact.unsigned("value", bits))
        .with("range", "[0, " + Long.MAX_VALUE + "]")
        .at(Stage.OUTPUT);
  }

  private static boolean endsWithEndOfStream(ArrowBuf segment, long length) {
    if (length < END_OF_STREAM.length) {
      return false;
    }
    long from = length - END_OF_STREAM.length;
    for (int i = 0; i < END_OF_STREAM.length; i++) {
      if (segment.getByte(from + i) != END_OF_STREAM[i]) {
        return false;
      }
    }
    return true;
  }

  /** A read channel over one segment's bytes that can skip a batch body without reading it. */
  private static final class BufferChannel implements ReadableByteChannel {
    private static final int CONTINUATION = -1;
    private final ByteBuffer bytes;

    BufferChannel(ByteBuffer bytes) {
      this.bytes = bytes;
    }

    @Override
    public int read(ByteBuffer dst) {
      if (!bytes.hasRemaining()) {
        return -1;
      }
      int n = Math.min(dst.remaining(), bytes.remaining());
      ByteBuffer chunk = bytes.slice();
      chunk.limit(n);
      dst.put(chunk);
      bytes.position(bytes.position() + n);
      return n;
    }

    long position() {
      return bytes.position();
    }

    long remaining() {
      return bytes.remaining();
    }

    /**
     * Whether the next message's length prefix claims no more than the bytes after it, read
     * without consuming them. Fewer than four bytes left fit: the reader sees the end there.
     */
    boolean nextMessageFits() {
      ByteBuffer peek = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
      if (peek.remaining() < Integer.BYTES) {
        return true;
      }
      int length = peek.getInt();
      if (length == CONTINUATION) {
        if (peek.remaining() < Integer.BYTES) {
          return false;
        }
        length = peek.getInt();
      }
      return length >= 0 && length <= peek.remaining();
    }

    void skip(long n) {
      bytes.position(bytes.position() + (int) n);
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {}
  }

  private static GatewayException evidence(String message) {
    return SafeText.failure(QueryCode.EVIDENCE, message);
  }

  private static GatewayException evidence(String message, Throwable underlying) {
    return SafeText.failure(QueryCode.EVIDENCE, message, underlying);
  }
}
