package io.transit.flight.query;

import java.time.LocalDate;
import java.util.List;
import java.util.Objects;

/**
 * A compiled query over one published Table: what the native engine executes. Produced by the
 * compiler from caller SQL; translated by the engine to its own SQL with quoted identifiers and
 * bound parameters. Column names are the Table's declared names (exact case).
 *
 * @param outputs the output columns in order (at most 128)
 * @param filter the WHERE predicate, or {@code null}
 * @param limit the LIMIT, or {@code null}
 * @param aggregate true when every output is an aggregate (one result row)
 */
public record QueryPlan(List<Output> outputs, Filter filter, Long limit, boolean aggregate) {
  public static final int MAX_OUTPUTS = 128;

  public QueryPlan {
    outputs = List.copyOf(outputs);
  }

  /** What an output column computes. */
  public enum OutputKind {
    COLUMN,
    SUM,
    COUNT_STAR,
    COUNT_COLUMN
  }

  /**
   * One output column.
   *
   * @param name the output name (alias, declared column name, or the expression as written)
   * @param nullable whether the Arrow int64 field is nullable
   * @param kind what it computes
   * @param column the source column's declared name ({@code null} for COUNT(*))
   * @param columnType the source column's logical type ({@code null} for COUNT(*))
   */
  public record Output(
      String name, boolean nullable, OutputKind kind, String column, LogicalType columnType) {
    public Output {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(kind, "kind");
    }
  }

  /** Comparison operators of WHERE. */
  public enum Op {
    EQ("="),
    NE("<>"),
    LT("<"),
    LE("<="),
    GT(">"),
    GE(">=");

    private final String sql;

    Op(String sql) {
      this.sql = sql;
    }

    public String sql() {
      return sql;
    }
  }

  /**
   * A typed literal. Value classes: INT64/UINT64 → {@link Long} (UINT64 holds the unsigned bits
   * in a long), FLOAT64 → {@link Double}, UTF8 → {@link String}, BOOL → {@link Boolean}, DATE →
   * {@link LocalDate}.
   */
  public record Literal(LogicalType type, Object value) {
    public Literal {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(value, "value");
    }
  }

  /** A WHERE predicate. */
  public sealed interface Filter permits Comparison, Between, InList, IsNull, And, Or, Not {}

  public record Comparison(String column, Op op, Literal value) implements Filter {}

  public record Between(String column, Literal low, Literal high, boolean negated)
      implements Filter {}

  public record InList(String column, List<Literal> values, boolean negated) implements Filter {
    public InList {
      values = List.copyOf(values);
    }
  }

  public record IsNull(String column, boolean negated) implements Filter {}

  public record And(Filter left, Filter right) implements Filter {}

  public record Or(Filter left, Filter right) implements Filter {}

  public record Not(Filter inner) implements Filter {}
}
