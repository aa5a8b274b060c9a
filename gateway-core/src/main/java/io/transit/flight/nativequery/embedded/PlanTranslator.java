package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.CellState;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Translates a compiled {@link QueryPlan} into DuckDB SQL over the published Table: identifiers
 * quoted, every literal a bound parameter with an explicit cast, so the caller's SQL text never
 * reaches DuckDB. {@link #validate} checks the plan against the declaration first, because the
 * plan comes from a compiler the engine does not own. Stateless and thread-safe.
 */
final class PlanTranslator {
  /** DuckDB SQL and its parameters, in order. */
  record Translated(String sql, List<QueryPlan.Literal> parameters) {
    void bind(PreparedStatement statement) throws SQLException {
      for (int i = 0; i < parameters.size(); i++) {
        QueryPlan.Literal l = parameters.get(i);
        int at = i + 1;
        switch (l.type()) {
          case INT64 -> statement.setLong(at, (Long) l.value());
          case UINT64 -> statement.setString(at, Long.toUnsignedString((Long) l.value()));
          case FLOAT64 -> statement.setDouble(at, (Double) l.value());
          case UTF8 -> statement.setString(at, (String) l.value());
          case BOOL -> statement.setBoolean(at, (Boolean) l.value());
          case DATE -> statement.setString(at, l.value().toString());
          case CELL_INT64 -> throw new IllegalStateException("CELL_INT64 literal");
        }
      }
    }
  }

  private PlanTranslator() {}

  /** Rejects (INVALID_PLAN) a plan that does not fit the declaration or the profile. */
  static void validate(QueryPlan plan, TableDeclaration table) {
    Map<String, LogicalType> types = new HashMap<>();
    for (ColumnDeclaration c : table.getColumnsList()) {
      types.put(c.getName(), DuckTables.logicalType(table, c));
    }
    if (plan.outputs().isEmpty() || plan.outputs().size() > QueryPlan.MAX_OUTPUTS) {
      throw invalid("a plan has 1 to " + QueryPlan.MAX_OUTPUTS + " outputs, not "
          + plan.outputs().size());
    }
    if (plan.limit() != null && plan.limit() < 0) {
      throw invalid("negative LIMIT");
    }
    for (QueryPlan.Output o : plan.outputs()) {
      boolean isAggregate = o.kind() != QueryPlan.OutputKind.COLUMN;
      if (isAggregate != plan.aggregate()) {
        throw invalid("output " + o.name() + " mixes aggregate and row outputs");
      }
      if (o.kind() == QueryPlan.OutputKind.COUNT_STAR) {
        continue;
      }
      LogicalType t = types.get(o.column());
      if (t == null || t != o.columnType()) {
        throw invalid("output " + o.name() + " names column " + o.column()
            + " which the Table does not declare as " + o.columnType());
      }
      // The engine still returns uint64 cells (its storage supports them); refusing to convert
      // them to Flight int64 is the gateway compiler's decision, not the engine's.
      if (o.kind() == QueryPlan.OutputKind.COLUMN && !t.projectable() && t != LogicalType.UINT64
          || o.kind() == QueryPlan.OutputKind.SUM && !t.summable()) {
        throw invalid("output " + o.name() + ": " + o.kind() + " of a " + t + " column");
      }
    }
    if (plan.filter() != null) {
      validateFilter(plan.filter(), types);
    }
  }

  private static void validateFilter(QueryPlan.Filter f, Map<String, LogicalType> types) {
    if (f instanceof QueryPlan.Comparison c) {
      LogicalType t = filterColumn(c.column(), types);
      literal(c.column(), t, c.value());
      boolean equality = c.op() == QueryPlan.Op.EQ || c.op() == QueryPlan.Op.NE;
      if (!equality && !t.ordered()) {
        throw invalid("operator " + c.op().sql() + " on " + t + " column " + c.column());
      }
    } else if (f instanceof QueryPlan.Between b) {
      LogicalType t = filterColumn(b.column(), types);
      if (!t.ordered()) {
        throw invalid("BETWEEN on " + t + " column " + b.column());
      }
      literal(b.column(), t, b.low());
      literal(b.column(), t, b.high());
    } else if (f instanceof QueryPlan.InList in) {
      LogicalType t = filterColumn(in.column(), types);
      if (t == LogicalType.BOOL) {
        throw invalid("IN on BOOL column " + in.column());
      }
      if (in.values().isEmpty()) {
        throw invalid("empty IN list on column " + in.column());
      }
      for (QueryPlan.Literal l : in.values()) {
        literal(in.column(), t, l);
      }
    } else if (f instanceof QueryPlan.IsNull n) {
      if (!types.containsKey(n.column())) {
        throw invalid("unknown column " + n.column());
      }
    } else if (f instanceof QueryPlan.And a) {
      validateFilter(a.left(), types);
      validateFilter(a.right(), types);
    } else if (f instanceof QueryPlan.Or o) {
      validateFilter(o.left(), types);
      validateFilter(o.right(), types);
    } else if (f instanceof QueryPlan.Not n) {
      validateFilter(n.inner(), types);
    } else {
      throw invalid("unknown filter " + f);
    }
  }

  private static LogicalType filterColumn(String column, Map<String, LogicalType> types) {
    LogicalType t = types.get(column);
    if (t == null) {
      throw invalid("unknown column " + column);
    }
    if (t == LogicalType.CELL_INT64) {
      throw invalid("CELL_INT64 column " + column + " cannot be filtered on");
    }
    return t;
  }

  private static void literal(String column, LogicalType t, QueryPlan.Literal l) {
    if (l.type() != t) {
      throw invalid("column " + column + " is " + t + " but its literal is " + l.type());
    }
    Class<?> expected = switch (t) {
      case INT64, UINT64 -> Long.class;
      case FLOAT64 -> Double.class;
      case UTF8 -> String.class;
      case BOOL -> Boolean.class;
      case DATE -> java.time.LocalDate.class;
      case CELL_INT64 -> Void.class;
    };
    if (!expected.isInstance(l.value())) {
      throw invalid("a " + t + " literal holds a " + l.value().getClass().getSimpleName());
    }
  }

  /**
   * The DuckDB query over {@code scan}; the plan must have passed {@link #validate}.
   *
   * <p>A projection's rows come in file order ("Row order" in docs/native-engine.md), which DuckDB
   * keeps for a scan and its filters but not through a join. DuckDB 1.4.4 may turn an IN list of
   * more than {@link #IN_LIST_KEPT} literals into a join (its in_clause optimizer); a projection
   * with such a list is therefore ordered by the scan's file position, or, where a file column
   * hides the position's names, sends its lists in parts the optimizer keeps as comparisons.
   */
  static Translated translate(QueryPlan plan, DuckTables.Scan scan) {
    List<QueryPlan.Literal> params = new ArrayList<>();
    StringBuilder sql = new StringBuilder("SELECT ");
    for (int i = 0; i < plan.outputs().size(); i++) {
      QueryPlan.Output o = plan.outputs().get(i);
      if (i > 0) {
        sql.append(", ");
      }
      switch (o.kind()) {
        case COLUMN -> sql.append(DuckTables.quote(o.column()));
        case SUM -> sql.append("SUM(").append(DuckTables.quote(o.column())).append(')');
        case COUNT_STAR -> sql.append("COUNT(*)");
        case COUNT_COLUMN -> {
          if (o.columnType() == LogicalType.CELL_INT64) {
            // A cell is read as the projection reads it (CellSegmentBuilder.copy): only a cell
            // holding a value is counted; a null cell or a NULL struct is not (the projection
            // turns both into NULL), and a missing one is refused by the check below.
            sql.append("COUNT(CASE WHEN ").append(cellState(o.column())).append(" IN (")
                .append(CellState.CELL_INT64_VALUE).append(", ")
                .append(CellState.CELL_UINT64_VALUE).append(") THEN 1 END)");
          } else {
            sql.append("COUNT(").append(DuckTables.quote(o.column())).append(')');
          }
        }
      }
    }
    // After the outputs, per counted cell column, the least state of its counted rows that is
    // neither a value nor null, NULL when there is none; the run refuses the count on it
    // (QueryRunner.checkCountedCells), as the adapter refuses the cell.
    for (QueryPlan.Output o : countedCells(plan)) {
      String s = cellState(o.column());
      sql.append(", MIN(CASE WHEN ").append(s).append(" NOT IN (")
          .append(CellState.CELL_INT64_VALUE).append(", ").append(CellState.CELL_UINT64_VALUE)
          .append(", ").append(CellState.CELL_NULL_VALUE).append(") THEN ").append(s)
          .append(" END)");
    }
    sql.append(" FROM ").append(scan.relation());
    boolean joined = !plan.aggregate() && plan.filter() != null && joined(plan.filter());
    if (plan.filter() != null) {
      sql.append(" WHERE ");
      filter(plan.filter(), joined && !scan.positions(), sql, params);
    }
    if (joined && scan.positions()) {
      sql.append(" ORDER BY ").append(DuckTables.Scan.FILE_ORDER);
    }
    if (plan.limit() != null) {
      sql.append(" LIMIT ").append(plan.limit());
    }
    return new Translated(sql.toString(), List.copyOf(params));
  }

  /** The COUNT outputs over CELL_INT64 columns, in output order: each has a check column. */
  static List<QueryPlan.Output> countedCells(QueryPlan plan) {
    return plan.outputs().stream()
        .filter(o -> o.kind() == QueryPlan.OutputKind.COUNT_COLUMN
            && o.columnType() == LogicalType.CELL_INT64)
        .toList();
  }

  /**
   * A cell's state as {@code CellSegmentBuilder.copy} records it: a NULL struct is a null cell; a
   * struct without a state, or with an int64 or uint64 state and no value, is a missing cell.
   */
  private static String cellState(String column) {
    String cell = DuckTables.quote(column);
    String state = cell + ".state";
    return "(CASE WHEN " + cell + " IS NULL THEN " + CellState.CELL_NULL_VALUE
        + " WHEN " + state + " IS NULL THEN " + CellState.CELL_MISSING_VALUE
        + " WHEN " + state + " IN (" + CellState.CELL_INT64_VALUE + ", "
        + CellState.CELL_UINT64_VALUE + ") AND " + cell + ".\"value\" IS NULL THEN "
        + CellState.CELL_MISSING_VALUE + " ELSE " + state + " END)";
  }

  /**
   * The most literals of one IN or NOT IN list DuckDB evaluates as comparisons: from five on
   * (1.4.4's in_clause optimizer, a fixed bound) it may turn the list into a join, which does not
   * keep a scan's row order. Lists as long as this cost nothing extra either way; a longer one
   * evaluated as comparisons costs each scanned row one per literal (18.5 s for 2,000 over
   * 20M rows, against 0.25 s joined and ordered back).
   */
  static final int IN_LIST_KEPT = 4;

  /** Whether DuckDB may evaluate {@code f} as a join: it holds a list longer than kept. */
  private static boolean joined(QueryPlan.Filter f) {
    if (f instanceof QueryPlan.InList in) {
      return in.values().size() > IN_LIST_KEPT;
    } else if (f instanceof QueryPlan.And a) {
      return joined(a.left()) || joined(a.right());
    } else if (f instanceof QueryPlan.Or o) {
      return joined(o.left()) || joined(o.right());
    } else if (f instanceof QueryPlan.Not n) {
      return joined(n.inner());
    }
    return false;
  }

  /**
   * {@code split}: a projection that must keep file order without the scan's position, so a
   * longer IN list goes as several of at most {@link #IN_LIST_KEPT} (OR'ed; NOT IN AND'ed).
   */
  private static void filter(QueryPlan.Filter f, boolean split, StringBuilder sql,
      List<QueryPlan.Literal> ps) {
    if (f instanceof QueryPlan.Comparison c) {
      sql.append(operand(c.column(), c.value())).append(' ').append(c.op().sql()).append(' ');
      param(c.value(), sql, ps);
    } else if (f instanceof QueryPlan.Between b) {
      sql.append('(').append(operand(b.column(), b.low()))
          .append(b.negated() ? " NOT BETWEEN " : " BETWEEN ");
      param(b.low(), sql, ps);
      sql.append(" AND ");
      param(b.high(), sql, ps);
      sql.append(')');
    } else if (f instanceof QueryPlan.InList in) {
      List<QueryPlan.Literal> values = in.values();
      int chunk = split ? IN_LIST_KEPT : values.size();
      boolean parts = values.size() > chunk;
      sql.append(parts ? "(" : "");
      for (int from = 0; from < values.size(); from += chunk) {
        if (from > 0) {
          sql.append(in.negated() ? " AND " : " OR ");
        }
        sql.append(operand(in.column(), values.get(0)))
            .append(in.negated() ? " NOT IN (" : " IN (");
        for (int i = from; i < Math.min(values.size(), from + chunk); i++) {
          sql.append(i > from ? ", " : "");
          param(values.get(i), sql, ps);
        }
        sql.append(')');
      }
      sql.append(parts ? ")" : "");
    } else if (f instanceof QueryPlan.IsNull n) {
      sql.append(DuckTables.quote(n.column())).append(n.negated() ? " IS NOT NULL" : " IS NULL");
    } else if (f instanceof QueryPlan.And a) {
      binary(a.left(), " AND ", a.right(), split, sql, ps);
    } else if (f instanceof QueryPlan.Or o) {
      binary(o.left(), " OR ", o.right(), split, sql, ps);
    } else if (f instanceof QueryPlan.Not n) {
      sql.append("(NOT ");
      filter(n.inner(), split, sql, ps);
      sql.append(')');
    }
  }

  /**
   * A filtered column as the comparison reads it. A FLOAT64 column is read through {@code * 1.0}
   * (exact for every double, NaN and -0.0 included), which keeps DuckDB from deciding the
   * comparison from the Parquet file's statistics: writers leave NaN out of a row group's min and
   * max (PyArrow does, as the Parquet format asks), and DuckDB 1.4.4 then skips row groups or
   * drops the comparison on the strength of bounds that NaN rows exceed, so {@code f > 1} or
   * {@code f <> 1} lost NaN rows (DuckDB orders NaN above every number) depending on how the file
   * was cut into row groups (duckdb/duckdb#25521). The cost: FLOAT64 filters read every row
   * group.
   */
  private static String operand(String column, QueryPlan.Literal value) {
    String quoted = DuckTables.quote(column);
    return value.type() == LogicalType.FLOAT64 ? "(" + quoted + " * 1.0)" : quoted;
  }

  private static void binary(QueryPlan.Filter l, String op, QueryPlan.Filter r, boolean split,
      StringBuilder sql, List<QueryPlan.Literal> ps) {
    sql.append('(');
    filter(l, split, sql, ps);
    sql.append(op);
    filter(r, split, sql, ps);
    sql.append(')');
  }

  private static void param(QueryPlan.Literal l, StringBuilder sql, List<QueryPlan.Literal> ps) {
    sql.append("CAST(? AS ").append(DuckTables.duckType(l.type())).append(')');
    ps.add(l);
  }

  private static GatewayException invalid(String message) {
    return QueryCode.INVALID_PLAN.failure(message);
  }
}
