package io.transit.flight.query;

import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.TableScope.DeclaredColumn;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.time.temporal.ChronoField;
import java.util.Locale;
import net.sf.jsqlparser.expression.BooleanValue;
import net.sf.jsqlparser.expression.CastExpression;
import net.sf.jsqlparser.expression.DoubleValue;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.expression.LongValue;
import net.sf.jsqlparser.expression.NullValue;
import net.sf.jsqlparser.expression.SignedExpression;
import net.sf.jsqlparser.expression.StringValue;

/**
 * Types the literal side of a WHERE predicate against its column's logical type. Integer
 * literals fit INT64/UINT64 (range-checked) and FLOAT64; decimals fit FLOAT64; strings fit UTF8
 * (and DATE when they read as {@code yyyy-mm-dd}); {@code DATE 'yyyy-mm-dd'} fits DATE;
 * {@code TRUE}/{@code FALSE} fit BOOL. A literal of the wrong kind is
 * {@code query.type_mismatch}; a literal of the right kind with an impossible value is
 * {@code query.invalid_literal}; anything that is not a literal is {@code query.unsupported}.
 * Stateless; any thread.
 */
final class Literals {
  private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger INT64_MAX = BigInteger.valueOf(Long.MAX_VALUE);
  private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
  /**
   * Strict ISO date: four-digit year, two-digit month and day, real calendar dates only. The
   * year is exactly four digits without a sign: {@code uuuu} would also take {@code +10000},
   * which DuckDB's DATE does not read.
   */
  private static final DateTimeFormatter ISO_DATE = new DateTimeFormatterBuilder()
      .appendValue(ChronoField.YEAR, 4)
      .appendLiteral('-')
      .appendValue(ChronoField.MONTH_OF_YEAR, 2)
      .appendLiteral('-')
      .appendValue(ChronoField.DAY_OF_MONTH, 2)
      .toFormatter(Locale.ROOT)
      .withResolverStyle(ResolverStyle.STRICT);

  /** The kinds of literal a caller can write, named as messages name them. */
  private enum Kind {
    INTEGER("integer"),
    DECIMAL("decimal"),
    STRING("string"),
    DATE("DATE"),
    BOOLEAN("BOOL");

    final String label;

    Kind(String label) {
      this.label = label;
    }
  }

  /** A recognised literal: its kind, its value (BigInteger, BigDecimal, String, Boolean) and text. */
  private record Parsed(Kind kind, Object value, String written) {}

  private Literals() {}

  /** The typed literal for comparing {@code column} with {@code expression}. */
  static Literal typed(DeclaredColumn column, Expression expression) {
    Parsed p = parse(expression);
    LogicalType type = column.type();
    switch (type) {
      case INT64:
        if (p.kind == Kind.INTEGER) {
          return new Literal(type, inRange(column, p, INT64_MIN, INT64_MAX).longValue());
        }
        break;
      case UINT64:
        if (p.kind == Kind.INTEGER) {
          // UINT64 literals keep their unsigned bits in a long (see QueryPlan.Literal).
          return new Literal(type, inRange(column, p, BigInteger.ZERO, UINT64_MAX).longValue());
        }
        break;
      case FLOAT64:
        if (p.kind == Kind.DECIMAL && p.value == null) {
          throw invalidLiteral(column, p, "is outside the FLOAT64 range");
        }
        if (p.kind == Kind.INTEGER || p.kind == Kind.DECIMAL) {
          BigDecimal exact =
              p.kind == Kind.INTEGER ? new BigDecimal((BigInteger) p.value) : (BigDecimal) p.value;
          double d = exact.doubleValue();
          if (Double.isInfinite(d)) {
            throw invalidLiteral(column, p, "is outside the FLOAT64 range");
          }
          return new Literal(type, d);
        }
        break;
      case UTF8:
        if (p.kind == Kind.STRING) {
          return new Literal(type, p.value);
        }
        break;
      case DATE:
        if (p.kind == Kind.DATE) {
          LocalDate date = date((String) p.value);
          if (date == null) {
            throw invalidLiteral(column, p, "is not a valid date (yyyy-mm-dd)");
          }
          return new Literal(type, date);
        }
        if (p.kind == Kind.STRING) {
          LocalDate date = date((String) p.value);
          if (date != null) {
            return new Literal(type, date);
          }
        }
        break;
      case BOOL:
        if (p.kind == Kind.BOOLEAN) {
          return new Literal(type, p.value);
        }
        break;
      default:
        break;
    }
    throw SafeText.invalid(
            "query.type_mismatch",
            "type mismatch: column " + SafeText.ident(column.name()) + " is " + type
                + ", literal " + SafeText.fragment(p.written) + " is " + p.kind.label)
        .with(SafeText.fact("column", column.name()))
        .with("expected", type.name())
        .with("supplied", p.kind.label)
        .with(SafeText.fact("literal", p.written));
  }

  /**
   * The value of an integer literal such as {@code 5}, {@code -5} or {@code +5}, or null when
   * the expression is not one. Used for LIMIT.
   */
  static BigInteger integer(Expression expression) {
    Expression e = QueryCompiler.unwrap(expression);
    int sign = 1;
    if (e instanceof SignedExpression s && (s.getSign() == '-' || s.getSign() == '+')) {
      sign = s.getSign() == '-' ? -1 : 1;
      e = s.getExpression();
    }
    if (e instanceof LongValue l) {
      BigInteger v = new BigInteger(l.getStringValue());
      return sign < 0 ? v.negate() : v;
    }
    return null;
  }

  private static Parsed parse(Expression expression) {
    Expression e = QueryCompiler.unwrap(expression);
    String written = SqlGuard.restore(e.toString());
    if (e instanceof SignedExpression s) {
      if (s.getSign() != '-' && s.getSign() != '+') {
        throw SafeText.unsupported("unsupported: operator " + s.getSign() + " in WHERE");
      }
      Expression inner = s.getExpression();
      boolean negative = s.getSign() == '-';
      if (inner instanceof LongValue l) {
        BigInteger v = new BigInteger(l.getStringValue());
        return new Parsed(Kind.INTEGER, negative ? v.negate() : v, written);
      }
      if (inner instanceof DoubleValue d) {
        BigDecimal v = decimal(d);
        return new Parsed(Kind.DECIMAL, negative && v != null ? v.negate() : v, written);
      }
      throw SafeText.unsupported("unsupported: arithmetic in WHERE");
    }
    if (e instanceof LongValue l) {
      return new Parsed(Kind.INTEGER, new BigInteger(l.getStringValue()), written);
    }
    if (e instanceof DoubleValue d) {
      return new Parsed(Kind.DECIMAL, decimal(d), written);
    }
    if (e instanceof StringValue s) {
      return new Parsed(Kind.STRING, string(s), written);
    }
    if (e instanceof BooleanValue b) {
      return new Parsed(Kind.BOOLEAN, b.getValue(), written);
    }
    if (e instanceof CastExpression c
        && c.isImplicitCast()
        && c.getColDataType() != null
        && c.getLeftExpression() instanceof StringValue s) {
      String typeName = c.getColDataType().getDataType();
      if ("DATE".equalsIgnoreCase(typeName) && c.getColDataType().getArgumentsStringList() == null) {
        return new Parsed(Kind.DATE, string(s), written);
      }
      throw SafeText.unsupported(
          "unsupported: " + SafeText.fragment(typeName.toUpperCase(java.util.Locale.ROOT))
              + " literal");
    }
    if (e instanceof NullValue) {
      throw SafeText.unsupported("unsupported: comparison with NULL (use IS [NOT] NULL)");
    }
    throw SafeText.unsupported("unsupported: " + QueryCompiler.describe(e) + " in WHERE");
  }

  /**
   * The literal's exact value; null when its exponent is beyond what BigDecimal holds and its
   * double is infinite (such as {@code 1e9999999999}). One whose double underflows reads as 0,
   * as DuckDB reads it.
   */
  private static BigDecimal decimal(DoubleValue d) {
    try {
      return new BigDecimal(d.toString());
    } catch (NumberFormatException e) {
      double v = d.getValue();
      return Double.isFinite(v) ? BigDecimal.valueOf(v) : null;
    }
  }

  private static String string(StringValue s) {
    String prefix = s.getPrefix();
    if (prefix != null && !prefix.equalsIgnoreCase("N")) {
      throw SafeText.unsupported(
          "unsupported: string literal with prefix " + SafeText.fragment(prefix));
    }
    // The parser keeps the doubled quote of an escaped quote; SQL strings have no other escape.
    return SqlGuard.restore(s.getValue()).replace("''", "'");
  }

  private static LocalDate date(String text) {
    try {
      return LocalDate.parse(text, ISO_DATE);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static BigInteger inRange(DeclaredColumn column, Parsed p, BigInteger min, BigInteger max) {
    BigInteger v = (BigInteger) p.value;
    if (v.compareTo(min) < 0 || v.compareTo(max) > 0) {
      throw invalidLiteral(column, p, "is outside the " + column.type() + " range");
    }
    return v;
  }

  private static io.transit.flight.diagnostic.GatewayException invalidLiteral(
      DeclaredColumn column, Parsed p, String why) {
    return SafeText.invalid(
            "query.invalid_literal",
            "literal " + SafeText.fragment(p.written) + " for column "
                + SafeText.ident(column.name()) + " " + why)
        .with(SafeText.fact("column", column.name()))
        .with("expected", column.type().name())
        .with(SafeText.fact("literal", p.written));
  }
}
