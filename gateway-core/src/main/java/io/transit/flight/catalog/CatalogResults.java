package io.transit.flight.catalog;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.flight.sql.FlightSqlProducer.Schemas;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetCatalogs;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetDbSchemas;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetSqlInfo;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetTableTypes;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetTables;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Computes the finite catalog results a caller may see: exactly its own binding's catalog,
 * schema and Table. Results are encoded as Arrow IPC streams with Flight SQL's reference
 * schemas; the encoded bytes are what metadata tickets digest, so the same command under the
 * same authorization always gives the same bytes.
 *
 * <p>Stateless and thread-safe.
 */
public final class CatalogResults {
  public static final String TABLE_TYPE = "TABLE";

  private final SqlInfoCatalog sqlInfo;

  public CatalogResults(SqlInfoCatalog sqlInfo) {
    this.sqlInfo = sqlInfo;
  }

  /** True for the five catalog commands this gateway serves. */
  public static boolean isCatalogCommand(Any command) {
    return command.is(CommandGetCatalogs.class) || command.is(CommandGetDbSchemas.class)
        || command.is(CommandGetTables.class) || command.is(CommandGetTableTypes.class)
        || command.is(CommandGetSqlInfo.class);
  }

  /** The reference schema of a catalog command's result. */
  public static Schema schemaOf(Any command) {
    try {
      if (command.is(CommandGetCatalogs.class)) {
        return Schemas.GET_CATALOGS_SCHEMA;
      } else if (command.is(CommandGetDbSchemas.class)) {
        return Schemas.GET_SCHEMAS_SCHEMA;
      } else if (command.is(CommandGetTables.class)) {
        return command.unpack(CommandGetTables.class).getIncludeSchema()
            ? Schemas.GET_TABLES_SCHEMA : Schemas.GET_TABLES_SCHEMA_NO_SCHEMA;
      } else if (command.is(CommandGetTableTypes.class)) {
        return Schemas.GET_TABLE_TYPES_SCHEMA;
      } else if (command.is(CommandGetSqlInfo.class)) {
        return Schemas.GET_SQL_INFO_SCHEMA;
      }
    } catch (InvalidProtocolBufferException e) {
      throw invalid(e);
    }
    throw GatewayException.of(Cause.UNSUPPORTED, "catalog.unsupported", "not a catalog command");
  }

  /** The encoded result of {@code command} for a caller bound to {@code table}. */
  public byte[] encode(Any command, TableDeclaration table, BufferAllocator allocator) {
    return encode(command, Optional.of(table), allocator);
  }

  /**
   * The encoded result of {@code command} for a caller who may see {@code visible}: with none,
   * GetCatalogs, GetDbSchemas and GetTables list nothing (a Table the caller may not see is
   * neither listed nor counted); GetTableTypes and GetSqlInfo describe the gateway, not a Table.
   */
  public byte[] encode(Any command, Optional<TableDeclaration> visible, BufferAllocator allocator) {
    try {
      if (command.is(CommandGetSqlInfo.class)) {
        return sqlInfo.encode(command.unpack(CommandGetSqlInfo.class).getInfoList());
      }
      try (VectorSchemaRoot root = VectorSchemaRoot.create(schemaOf(command), allocator)) {
        if (command.is(CommandGetTableTypes.class)) {
          fill(root, List.<String[]>of(new String[] {TABLE_TYPE}));
        } else if (visible.isEmpty()) {
          fill(root, List.of());
        } else if (command.is(CommandGetCatalogs.class)) {
          fill(root, List.<String[]>of(new String[] {visible.get().getCatalog()}));
        } else if (command.is(CommandGetDbSchemas.class)) {
          TableDeclaration table = visible.get();
          CommandGetDbSchemas c = command.unpack(CommandGetDbSchemas.class);
          boolean match = catalogMatches(c.hasCatalog(), c.getCatalog(), table)
              && likeMatches(c.hasDbSchemaFilterPattern(), c.getDbSchemaFilterPattern(), table.getDbSchema());
          fill(root, match ? List.<String[]>of(new String[] {table.getCatalog(), table.getDbSchema()}) : List.of());
        } else if (command.is(CommandGetTables.class)) {
          fillTables(root, command.unpack(CommandGetTables.class), visible.get());
        }
        return IpcBytes.write(root);
      }
    } catch (InvalidProtocolBufferException e) {
      throw invalid(e);
    }
  }

  /**
   * The Arrow schema GetTables reports for a Table: every column as int64 with its declared name
   * and nullability. Only a Table that fits the primitive profile has one: projectable columns,
   * at most as many as a statement may output (a wider one could not be read back whole).
   */
  public static Schema primitiveSchema(TableDeclaration table) {
    if (table.getColumnsCount() > QueryPlan.MAX_OUTPUTS) {
      throw GatewayException.of(Cause.UNSUPPORTED, "catalog.not_primitive",
          "table " + table.getTable() + " does not fit the primitive int64 profile: "
              + table.getColumnsCount() + " columns, more than " + QueryPlan.MAX_OUTPUTS)
          .with(Fact.unsigned("limit", QueryPlan.MAX_OUTPUTS))
          .with(Fact.unsigned("required", table.getColumnsCount()));
    }
    List<Field> fields = new ArrayList<>();
    for (ColumnDeclaration c : table.getColumnsList()) {
      LogicalType type = LogicalType.valueOf(c.getLogicalType());
      if (!type.projectable()) {
        throw GatewayException.of(Cause.UNSUPPORTED, "catalog.not_primitive",
            "table " + table.getTable() + " does not fit the primitive int64 profile: column "
                + c.getName() + " is " + type)
            .with("column", c.getName()).with("type", type.name());
      }
      fields.add(new Field(c.getName(),
          new FieldType(c.getNullable(), new ArrowType.Int(64, true), null), null));
    }
    return new Schema(fields);
  }

  private static void fillTables(VectorSchemaRoot root, CommandGetTables c, TableDeclaration t) {
    boolean match = catalogMatches(c.hasCatalog(), c.getCatalog(), t)
        && likeMatches(c.hasDbSchemaFilterPattern(), c.getDbSchemaFilterPattern(), t.getDbSchema())
        && likeMatches(c.hasTableNameFilterPattern(), c.getTableNameFilterPattern(), t.getTable())
        && (c.getTableTypesCount() == 0 || c.getTableTypesList().contains(TABLE_TYPE));
    if (!match) {
      root.setRowCount(0);
      return;
    }
    byte[] schemaBytes = c.getIncludeSchema() ? IpcBytes.schemaMessage(primitiveSchema(t)) : null;
    fill(root, List.<String[]>of(new String[] {t.getCatalog(), t.getDbSchema(), t.getTable(), TABLE_TYPE}));
    if (schemaBytes != null) {
      VarBinaryVector v = (VarBinaryVector) root.getVector("table_schema");
      v.setSafe(0, schemaBytes);
      v.setValueCount(1);
    }
  }

  /** Fills the leading utf8 columns of {@code root} with {@code rows}. */
  private static void fill(VectorSchemaRoot root, List<String[]> rows) {
    for (int r = 0; r < rows.size(); r++) {
      String[] row = rows.get(r);
      for (int col = 0; col < row.length; col++) {
        ((VarCharVector) root.getVector(col)).setSafe(r, row[col].getBytes(StandardCharsets.UTF_8));
      }
    }
    for (int col = 0; col < root.getFieldVectors().size(); col++) {
      root.getVector(col).setValueCount(rows.size());
    }
    root.setRowCount(rows.size());
  }

  /** An unset catalog filter matches; "" matches only tables without a catalog. */
  private static boolean catalogMatches(boolean set, String catalog, TableDeclaration t) {
    return !set || catalog.equals(t.getCatalog());
  }

  /** {@link #likeTokens}' wildcards: negative, so never equal to a code point. */
  private static final int ANY = -1;
  private static final int ONE = -2;

  /**
   * SQL LIKE with {@code %} and {@code _} ({@code \} escapes either); unset matches all. Matched
   * over code points by one pass that, on a mismatch, resumes after the last {@code %} one
   * character further on: at most pattern × value steps whatever the caller sends (a regular
   * expression would backtrack through every way of splitting the value among the {@code %}s,
   * exponentially many for a pattern of many).
   */
  static boolean likeMatches(boolean set, String pattern, String value) {
    if (!set) {
      return true;
    }
    int[] tokens = likeTokens(pattern);
    int[] chars = value.codePoints().toArray();
    int p = 0;
    int v = 0;
    int lastAny = -1; // the last % passed (its token index), -1 before any
    int anyEnd = 0; // where the part of the value that % matches ends now
    while (v < chars.length) {
      if (p < tokens.length && (tokens[p] == ONE || tokens[p] == chars[v])) {
        p++;
        v++;
      } else if (p < tokens.length && tokens[p] == ANY) {
        lastAny = p++;
        anyEnd = v;
      } else if (lastAny >= 0) {
        p = lastAny + 1;
        v = ++anyEnd;
      } else {
        return false;
      }
    }
    while (p < tokens.length && tokens[p] == ANY) {
      p++;
    }
    return p == tokens.length;
  }

  /**
   * The pattern's code points, with unescaped {@code %} as {@link #ANY} and {@code _} as {@link
   * #ONE}.
   */
  private static int[] likeTokens(String pattern) {
    int[] cps = pattern.codePoints().toArray();
    int[] tokens = new int[cps.length];
    int n = 0;
    for (int i = 0; i < cps.length; i++) {
      if (cps[i] == '\\' && i + 1 < cps.length) {
        tokens[n++] = cps[++i];
      } else if (cps[i] == '%') {
        tokens[n++] = ANY;
      } else if (cps[i] == '_') {
        tokens[n++] = ONE;
      } else {
        tokens[n++] = cps[i];
      }
    }
    return Arrays.copyOf(tokens, n);
  }

  private static GatewayException invalid(InvalidProtocolBufferException e) {
    return new GatewayException(Cause.INVALID_PROTOBUF, "flight.invalid_command",
        "catalog command is not a valid protobuf message", e);
  }
}
