package io.transit.flight.cells;

import io.transit.flight.proto.CellState;
import java.util.List;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The retained cell encoding shared by the engine (writer) and the adapter (reader).
 *
 * <p>A retained segment is one Arrow IPC <em>stream</em> (schema message, exactly one record
 * batch, end-of-stream marker). Each output column is a non-nullable struct named like the output
 * column, with two non-nullable children: {@code state} (uint8, a {@link CellState} number) and
 * {@code value} (int64; the int64 value, or the unsigned bits for {@code CELL_UINT64}, or 0 for
 * every other state). A null result value is a cell in state {@code CELL_NULL}, never an Arrow
 * null.
 */
public final class CellFormat {
  public static final String STATE = "state";
  public static final String VALUE = "value";

  private CellFormat() {}

  public static Field cellField(String name) {
    Field state = new Field(STATE, FieldType.notNullable(new ArrowType.Int(8, false)), null);
    Field value = new Field(VALUE, FieldType.notNullable(new ArrowType.Int(64, true)), null);
    return new Field(name, FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(state, value));
  }

  /** The segment schema for output columns with these names. */
  public static Schema segmentSchema(List<String> names) {
    return new Schema(names.stream().map(CellFormat::cellField).toList());
  }

  /** The wire number of a state as stored in the {@code state} child. */
  public static byte code(CellState state) {
    return (byte) state.getNumber();
  }
}
