package io.transit.flight.query;

import io.transit.flight.query.QueryPlan.And;
import io.transit.flight.query.QueryPlan.Between;
import io.transit.flight.query.QueryPlan.Comparison;
import io.transit.flight.query.QueryPlan.Filter;
import io.transit.flight.query.QueryPlan.InList;
import io.transit.flight.query.QueryPlan.IsNull;
import io.transit.flight.query.QueryPlan.Literal;
import io.transit.flight.query.QueryPlan.Not;
import io.transit.flight.query.QueryPlan.Op;
import io.transit.flight.query.QueryPlan.Or;
import io.transit.flight.query.TableScope.DeclaredColumn;
import java.util.ArrayList;
import java.util.List;
import net.sf.jsqlparser.expression.BinaryExpression;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.expression.NotExpression;
import net.sf.jsqlparser.expression.operators.conditional.AndExpression;
import net.sf.jsqlparser.expression.operators.conditional.OrExpression;
import net.sf.jsqlparser.expression.operators.relational.EqualsTo;
import net.sf.jsqlparser.expression.operators.relational.GreaterThan;
import net.sf.jsqlparser.expression.operators.relational.GreaterThanEquals;
import net.sf.jsqlparser.expression.operators.relational.InExpression;
import net.sf.jsqlparser.expression.operators.relational.IsNullExpression;
import net.sf.jsqlparser.expression.operators.relational.MinorThan;
import net.sf.jsqlparser.expression.operators.relational.MinorThanEquals;
import net.sf.jsqlparser.expression.operators.relational.NotEqualsTo;
import net.sf.jsqlparser.expression.operators.relational.OldOracleJoinBinaryExpression;
import net.sf.jsqlparser.expression.operators.relational.ParenthesedExpressionList;
import net.sf.jsqlparser.schema.Column;
import net.sf.jsqlparser.statement.select.Select;

/**
 * Translates a WHERE clause into a {@link Filter}: comparisons of one column with one literal
 * (either side; normalised to column-op-literal), BETWEEN, IN, IS [NOT] NULL, AND, OR, NOT and
 * parentheses. Operator availability per logical type follows {@link LogicalType}. One instance
 * per compilation; confined to the compiling thread.
 */
final class FilterCompiler {
  /** Deeper predicates are refused rather than risking the stack (the parser bounds them too). */
  private static final int MAX_DEPTH = 256;

  private final TableScope scope;

  FilterCompiler(TableScope scope) {
    this.scope = scope;
  }

  Filter compile(Expression where) {
    return translate(where, 0);
  }

  /**
   * The boolean structure is rebuilt from a flat token sequence rather than taken from the parse
   * tree: JSqlParser 5.3 parses {@code c IN (1, 2) AND rest} as {@code c IN ((1, 2) AND rest)}
   * (upstream issues 2244/2282), swallowing everything after the list up to the enclosing
   * parenthesis. Flattening (with the list put back under its IN) and re-reading with SQL
   * precedence (NOT over AND over OR, left-associative) gives the tree the SQL means, whichever
   * way the parser nested it. Explicit parentheses stay groups.
   */
  private Filter translate(Expression e, int depth) {
    if (depth > MAX_DEPTH) {
      throw SafeText.unsupported("unsupported: WHERE nested more than " + MAX_DEPTH + " deep");
    }
    List<Object> tokens = new ArrayList<>();
    flatten(e, tokens);
    Reader reader = new Reader(tokens, depth);
    Filter f = reader.or();
    if (reader.at != tokens.size()) {
      throw new IllegalStateException("boolean tokens left over");
    }
    return f;
  }

  private enum Word { AND, OR, NOT }

  /** A predicate operand: a leaf, or a parenthesized group translated on its own. */
  private record Operand(Expression expression) {}

  private static void flatten(Expression e, List<Object> out) {
    // Dialect spellings the parser folds into AND and NOT, which DuckDB refuses: taken as AND or
    // NOT they would answer SQL DuckDB does not run.
    if (e instanceof AndExpression a && a.isUseOperator()) {
      throw SafeText.unsupported("unsupported: && (write AND)");
    }
    if (e instanceof NotExpression n && n.isExclamationMark()) {
      throw SafeText.unsupported("unsupported: ! (write NOT)");
    }
    if (e instanceof AndExpression a) {
      flatten(a.getLeftExpression(), out);
      out.add(Word.AND);
      flatten(a.getRightExpression(), out);
    } else if (e instanceof OrExpression o) {
      flatten(o.getLeftExpression(), out);
      out.add(Word.OR);
      flatten(o.getRightExpression(), out);
    } else if (e instanceof NotExpression n) {
      out.add(Word.NOT);
      flatten(n.getExpression(), out);
    } else {
      Expression repaired = e instanceof InExpression in ? swallowed(in) : null;
      if (repaired != null) {
        flatten(repaired, out);
      } else {
        out.add(new Operand(e));
      }
    }
  }

  /**
   * For a mis-nested IN, its right side with the leftmost list replaced by the IN predicate over
   * that list; null when the IN is well formed.
   */
  private static Expression swallowed(InExpression in) {
    if (!(in.getRightExpression() instanceof BinaryExpression top)) {
      return null;
    }
    BinaryExpression parent = top;
    while (parent.getLeftExpression() instanceof BinaryExpression inner) {
      parent = inner;
    }
    if (!(parent.getLeftExpression() instanceof ParenthesedExpressionList<?> list)) {
      return null;
    }
    InExpression fixed = new InExpression(in.getLeftExpression(), list);
    fixed.setNot(in.isNot());
    fixed.setGlobal(in.isGlobal());
    parent.setLeftExpression(fixed);
    in.setRightExpression(list);
    return top;
  }

  /** Precedence reader over the flat tokens; one per translate call. */
  private final class Reader {
    private final List<Object> tokens;
    private final int depth;
    private int at;

    Reader(List<Object> tokens, int depth) {
      this.tokens = tokens;
      this.depth = depth;
    }

    Filter or() {
      Filter f = and();
      while (at < tokens.size() && tokens.get(at) == Word.OR) {
        at++;
        f = new Or(f, and());
      }
      return f;
    }

    Filter and() {
      Filter f = not();
      while (at < tokens.size() && tokens.get(at) == Word.AND) {
        at++;
        f = new And(f, not());
      }
      return f;
    }

    Filter not() {
      Object t = tokens.get(at++);
      if (t == Word.NOT) {
        return new Not(not());
      }
      return leaf(((Operand) t).expression(), depth);
    }
  }

  private Filter leaf(Expression e, int depth) {
    if (e instanceof ParenthesedExpressionList<?> p) {
      if (p.size() != 1) {
        throw SafeText.unsupported("unsupported: row value in WHERE");
      }
      return translate(p.get(0), depth + 1);
    }
    Op op = operator(e);
    if (op != null) {
      return comparison((OldOracleJoinBinaryExpression) e, op);
    }
    if (e instanceof net.sf.jsqlparser.expression.operators.relational.Between b) {
      return between(b);
    }
    if (e instanceof InExpression in) {
      return inList(in);
    }
    if (e instanceof IsNullExpression n) {
      return isNull(n);
    }
    if (e instanceof Column) {
      throw SafeText.unsupported("unsupported: bare column as a predicate (compare it)");
    }
    throw SafeText.unsupported("unsupported: " + QueryCompiler.describe(e) + " in WHERE");
  }

  private static Op operator(Expression e) {
    // Exact classes: subclasses of these carry other operators.
    Class<?> c = e.getClass();
    if (c == EqualsTo.class) {
      return Op.EQ;
    } else if (c == NotEqualsTo.class) {
      String spelled = ((NotEqualsTo) e).getStringExpression();
      if (!"<>".equals(spelled) && !"!=".equals(spelled)) {
        throw SafeText.unsupported("unsupported: the operator " + SafeText.ident(spelled));
      }
      return Op.NE;
    } else if (c == MinorThan.class) {
      return Op.LT;
    } else if (c == MinorThanEquals.class) {
      return Op.LE;
    } else if (c == GreaterThan.class) {
      return Op.GT;
    } else if (c == GreaterThanEquals.class) {
      return Op.GE;
    }
    return null;
  }

  private Filter comparison(OldOracleJoinBinaryExpression b, Op op) {
    if (b.getOldOracleJoinSyntax() != 0 || b.getOraclePriorPosition() != 0) {
      throw SafeText.unsupported("unsupported: Oracle join or PRIOR syntax");
    }
    Expression left = QueryCompiler.unwrap(b.getLeftExpression());
    Expression right = QueryCompiler.unwrap(b.getRightExpression());
    Column column;
    Expression literal;
    if (left instanceof Column l && !(right instanceof Column)) {
      column = l;
      literal = right;
    } else if (right instanceof Column r && !(left instanceof Column)) {
      column = r;
      literal = left;
      op = flip(op);
    } else if (left instanceof Column) {
      throw SafeText.unsupported("unsupported: comparison of two columns");
    } else {
      throw SafeText.unsupported("unsupported: comparison without a column");
    }
    DeclaredColumn c = scope.resolve(column);
    requireOperator(c, op.sql(), allows(c.type(), op));
    return new Comparison(c.name(), op, Literals.typed(c, literal));
  }

  private Filter between(net.sf.jsqlparser.expression.operators.relational.Between b) {
    if (!(QueryCompiler.unwrap(b.getLeftExpression()) instanceof Column column)) {
      throw SafeText.unsupported("unsupported: BETWEEN must test a column");
    }
    DeclaredColumn c = scope.resolve(column);
    requireOperator(c, "BETWEEN", c.type().filterable() && c.type().ordered());
    Literal low = Literals.typed(c, b.getBetweenExpressionStart());
    Literal high = Literals.typed(c, b.getBetweenExpressionEnd());
    return new Between(c.name(), low, high, b.isNot());
  }

  private Filter inList(InExpression in) {
    if (in.isGlobal() || in.getOldOracleJoinSyntax() != 0 || in.getOraclePriorPosition() != 0) {
      throw SafeText.unsupported("unsupported: IN variant");
    }
    if (!(QueryCompiler.unwrap(in.getLeftExpression()) instanceof Column column)) {
      throw SafeText.unsupported("unsupported: IN must test a column");
    }
    Expression right = in.getRightExpression();
    if (right instanceof Select) {
      throw SafeText.unsupported("unsupported: subquery");
    }
    if (!(right instanceof ParenthesedExpressionList<?> items)) {
      throw SafeText.unsupported("unsupported: IN needs a parenthesized list of literals");
    }
    if (items.isEmpty()) {
      // Neither standard SQL nor the engine (DuckDB 1.4.4: a parser error) has an empty list;
      // giving it a meaning here counted NULL rows into NOT IN ().
      throw SafeText.invalid("query.syntax", "syntax error: empty IN list");
    }
    DeclaredColumn c = scope.resolve(column);
    requireOperator(c, "IN", c.type().filterable());
    List<Literal> values = new ArrayList<>(items.size());
    for (Expression item : items) {
      values.add(Literals.typed(c, item));
    }
    return new InList(c.name(), values, in.isNot());
  }

  private Filter isNull(IsNullExpression n) {
    if (!(QueryCompiler.unwrap(n.getLeftExpression()) instanceof Column column)) {
      throw SafeText.unsupported("unsupported: IS NULL must test a column");
    }
    DeclaredColumn c = scope.resolve(column);
    requireOperator(c, "IS NULL", c.type() != LogicalType.CELL_INT64);
    // PostgreSQL's postfix NOTNULL is IS NOT NULL; its ISNULL is IS NULL.
    return new IsNull(c.name(), n.isUseNotNull() || n.isNot());
  }

  private static boolean allows(LogicalType type, Op op) {
    boolean equality = op == Op.EQ || op == Op.NE;
    if (type == LogicalType.BOOL) {
      return equality;
    }
    return type.filterable() && (equality || type.ordered());
  }

  private static void requireOperator(DeclaredColumn c, String op, boolean allowed) {
    if (!allowed) {
      throw SafeText.unsupported(
              "unsupported: " + op + " on column " + SafeText.ident(c.name()) + " of type "
                  + c.type())
          .with(SafeText.fact("column", c.name()))
          .with("type", c.type().name());
    }
  }

  private static Op flip(Op op) {
    return switch (op) {
      case LT -> Op.GT;
      case LE -> Op.GE;
      case GT -> Op.LT;
      case GE -> Op.LE;
      default -> op;
    };
  }
}
