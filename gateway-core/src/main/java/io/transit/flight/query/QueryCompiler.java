package io.transit.flight.query;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.OutputColumn;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.QueryPlan.Output;
import io.transit.flight.query.QueryPlan.OutputKind;
import io.transit.flight.query.TableScope.DeclaredColumn;
import io.transit.flight.query.TableScope.Ident;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import net.sf.jsqlparser.expression.AnalyticExpression;
import net.sf.jsqlparser.expression.BinaryExpression;
import net.sf.jsqlparser.expression.CaseExpression;
import net.sf.jsqlparser.expression.CastExpression;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.expression.Function;
import net.sf.jsqlparser.expression.JdbcNamedParameter;
import net.sf.jsqlparser.expression.JdbcParameter;
import net.sf.jsqlparser.expression.operators.relational.LikeExpression;
import net.sf.jsqlparser.expression.operators.relational.ParenthesedExpressionList;
import net.sf.jsqlparser.parser.CCJSqlParser;
import net.sf.jsqlparser.parser.CCJSqlParserUtil;
import net.sf.jsqlparser.parser.ParseException;
import net.sf.jsqlparser.parser.Token;
import net.sf.jsqlparser.parser.TokenMgrException;
import net.sf.jsqlparser.schema.Column;
import net.sf.jsqlparser.schema.Table;
import net.sf.jsqlparser.statement.Statement;
import net.sf.jsqlparser.statement.Statements;
import net.sf.jsqlparser.statement.select.AllColumns;
import net.sf.jsqlparser.statement.select.AllTableColumns;
import net.sf.jsqlparser.statement.select.Limit;
import net.sf.jsqlparser.statement.select.PlainSelect;
import net.sf.jsqlparser.statement.select.Select;
import net.sf.jsqlparser.statement.select.SelectItem;
import net.sf.jsqlparser.statement.select.SetOperationList;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Compiles caller SQL over the caller's one published Table into a {@link QueryPlan}, or fails
 * with a {@link GatewayException} whose cause follows one rule: input no SQL engine would run
 * (syntax, unknown names, literal/column type mismatches, out-of-range literals, aggregates mixed
 * with plain columns) is {@code INVALID_ARGUMENT}; valid SQL outside the profile is
 * {@code UNIMPLEMENTED} ({@code query.unsupported}). {@code docs/queries.md} lists the supported
 * query set and every failure. Messages are short printable ASCII and never contain the SQL.
 *
 * <p>Stateless and thread-safe: each call parses on the calling thread; {@link SqlGuard} bounds
 * the text first, and a {@link CompileWatch} lets another thread stop the parse.
 */
public final class QueryCompiler {
  private QueryCompiler() {}

  /** Compiles {@code sql} against {@code table}; throws {@link GatewayException} when refused. */
  public static QueryPlan compile(String sql, TableDeclaration table) {
    return compile(sql, table, CompileWatch.NONE);
  }

  /**
   * As {@link #compile(String, TableDeclaration)}; when another thread abandons {@code watch},
   * the parse stops early and the watch's failure is thrown.
   */
  public static QueryPlan compile(String sql, TableDeclaration table, CompileWatch watch) {
    Objects.requireNonNull(sql, "sql");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(watch, "watch");
    TableScope scope = TableScope.of(table);
    PlainSelect select = plainSelect(parse(sql, watch));
    rejectClauses(select);
    if (!(select.getFromItem() instanceof Table from)) {
      throw SafeText.unsupported(select.getFromItem() == null
          ? "unsupported: SELECT without FROM"
          : "unsupported: FROM must name the published table");
    }
    requireCanonical(from, from.getFullyQualifiedName()
        + (from.getAlias() == null ? "" : from.getAlias().toString()), "table option in FROM");
    scope.bindFrom(from);
    List<Output> outputs = outputs(select.getSelectItems(), scope);
    QueryPlan.Filter filter =
        select.getWhere() == null ? null : new FilterCompiler(scope).compile(select.getWhere());
    Long limit = limit(select.getLimit());
    requireOnlyKnownClauses(select);
    boolean aggregate = outputs.get(0).kind() != OutputKind.COLUMN;
    return new QueryPlan(outputs, filter, limit, aggregate);
  }

  /** The Arrow schema of a plan's result: one signed int64 field per output, no metadata. */
  public static Schema outputSchema(QueryPlan plan) {
    List<Field> fields = new ArrayList<>(plan.outputs().size());
    for (Output o : plan.outputs()) {
      fields.add(int64Field(o.name(), o.nullable()));
    }
    return new Schema(fields);
  }

  /** The same schema from a retained manifest's columns (what DoGet has in hand). */
  public static Schema outputSchema(List<OutputColumn> columns) {
    List<Field> fields = new ArrayList<>(columns.size());
    for (OutputColumn c : columns) {
      fields.add(int64Field(c.getName(), c.getNullable()));
    }
    return new Schema(fields);
  }

  private static Field int64Field(String name, boolean nullable) {
    return new Field(name, new FieldType(nullable, new ArrowType.Int(64, true), null), null);
  }

  private static Statement parse(String sql, CompileWatch watch) {
    if (sql.isBlank()) {
      throw SafeText.invalid("query.syntax", "syntax error: empty query");
    }
    // Linear and before any parse: the bounds hold whatever the comments hide.
    String text = SqlGuard.check(sql);
    Statements statements;
    try {
      // Complex parsing backtracks exponentially on nested parentheses and adds nothing the
      // profile needs.
      CCJSqlParser parser = CCJSqlParserUtil.newParser(text).withAllowComplexParsing(false);
      watch.attach(parser);
      watch.check();
      statements = parser.Statements();
      watch.check();
    } catch (GatewayException e) {
      throw e;
    } catch (ParseException e) {
      watch.check();
      throw SafeText.invalid("query.syntax", "syntax error" + position(e));
    } catch (TokenMgrException | StackOverflowError e) {
      watch.check();
      throw SafeText.invalid("query.syntax", "syntax error: invalid token");
    } catch (RuntimeException e) {
      watch.check();
      throw SafeText.invalid("query.syntax", "syntax error");
    }
    if (statements == null || statements.isEmpty()) {
      throw SafeText.invalid("query.syntax", "syntax error: empty query");
    }
    if (statements.size() > 1) {
      throw SafeText.unsupported("unsupported: multiple statements");
    }
    return statements.get(0);
  }

  private static String position(ParseException e) {
    Token at = e.currentToken == null ? null : e.currentToken.next;
    if (at == null) {
      return "";
    }
    return " at line " + at.beginLine + ", column " + at.beginColumn;
  }

  private static PlainSelect plainSelect(Statement statement) {
    if (statement instanceof PlainSelect p) {
      return p;
    }
    if (statement instanceof SetOperationList) {
      throw SafeText.unsupported("unsupported: UNION, INTERSECT or EXCEPT");
    }
    if (statement instanceof Select s) {
      throw SafeText.unsupported("unsupported: " + (s.getWithItemsList() != null
          ? "WITH" : "query form " + sqlWords(s, "Select")));
    }
    throw SafeText.unsupported(
        "unsupported: only SELECT is supported, not " + sqlWords(statement, "Statement"));
  }

  private static void rejectClauses(PlainSelect s) {
    String clause = null;
    if (s.getWithItemsList() != null && !s.getWithItemsList().isEmpty()) {
      clause = "WITH";
    } else if (s.getDistinct() != null) {
      clause = "DISTINCT";
    } else if (s.getJoins() != null && !s.getJoins().isEmpty()) {
      clause = "JOIN";
    } else if (s.getGroupBy() != null) {
      clause = "GROUP BY";
    } else if (s.getHaving() != null) {
      clause = "HAVING";
    } else if (s.getOrderByElements() != null && !s.getOrderByElements().isEmpty()) {
      clause = "ORDER BY";
    } else if (s.getOffset() != null || s.getLimit() != null && s.getLimit().getOffset() != null) {
      clause = "OFFSET";
    } else if (s.getFetch() != null) {
      clause = "FETCH (use LIMIT)";
    } else if (s.getTop() != null) {
      clause = "TOP (use LIMIT)";
    } else if (s.getIntoTables() != null && !s.getIntoTables().isEmpty()) {
      clause = "SELECT INTO";
    } else if (s.getWindowDefinitions() != null && !s.getWindowDefinitions().isEmpty()) {
      clause = "WINDOW";
    } else if (s.getQualify() != null) {
      clause = "QUALIFY";
    } else if (s.getForMode() != null) {
      clause = "FOR UPDATE";
    }
    if (clause != null) {
      throw SafeText.unsupported("unsupported: " + clause);
    }
  }

  /**
   * Whatever the parser accepted beyond the clauses compiled here (hints, sampling, dialect
   * options, ...) would change the deparsed text; rebuilding from the compiled clauses and
   * comparing refuses all of it, including clauses this class never heard of.
   */
  private static void requireOnlyKnownClauses(PlainSelect s) {
    PlainSelect rebuilt = new PlainSelect();
    rebuilt.setSelectItems(s.getSelectItems());
    rebuilt.setFromItem(s.getFromItem());
    rebuilt.setWhere(s.getWhere());
    rebuilt.setLimit(s.getLimit());
    requireCanonical(s, rebuilt.toString(), "clause in SELECT");
  }

  private static void requireCanonical(Object parsed, String expected, String what) {
    if (!parsed.toString().equals(expected)) {
      throw SafeText.unsupported("unsupported: " + what);
    }
  }

  private static List<Output> outputs(List<SelectItem<?>> items, TableScope scope) {
    List<Output> outputs = new ArrayList<>();
    boolean columns = false;
    boolean aggregates = false;
    for (SelectItem<?> item : items) {
      Expression e = item.getExpression();
      String alias = item.getAlias() == null ? null : alias(item);
      if (e instanceof AllColumns all && !(e instanceof AllTableColumns)) {
        requireCanonical(all, "*", "modifier on *");
        requireNoAlias(alias, "*");
        scope.columns().forEach(c -> outputs.add(column(c, null)));
        columns = true;
      } else if (e instanceof AllTableColumns all) {
        requireCanonical(all, all.getTable().getFullyQualifiedName() + ".*", "modifier on *");
        requireNoAlias(alias, "*");
        scope.checkQualifier(all);
        scope.columns().forEach(c -> outputs.add(column(c, null)));
        columns = true;
      } else if (unwrap(e) instanceof Column c) {
        outputs.add(column(scope.resolve(c), alias));
        columns = true;
      } else if (e instanceof Function f && !(e instanceof AnalyticExpression)) {
        outputs.add(aggregate(f, alias, scope));
        aggregates = true;
      } else {
        throw SafeText.unsupported("unsupported: " + describe(e) + " in SELECT list");
      }
      if (outputs.size() > QueryPlan.MAX_OUTPUTS) {
        break;
      }
    }
    if (outputs.size() > QueryPlan.MAX_OUTPUTS) {
      throw SafeText.unsupported(
          "unsupported: more than " + QueryPlan.MAX_OUTPUTS + " output columns");
    }
    if (columns && aggregates) {
      throw SafeText.invalid(
          "query.invalid_aggregate", "aggregates mixed with plain columns need GROUP BY");
    }
    return outputs;
  }

  private static String alias(SelectItem<?> item) {
    if (item.getAlias().getAliasColumns() != null && !item.getAlias().getAliasColumns().isEmpty()) {
      throw SafeText.unsupported("unsupported: column list in an alias");
    }
    String raw = item.getAlias().getName();
    if (raw.length() >= 2 && raw.charAt(0) == '\'' && raw.charAt(raw.length() - 1) == '\'') {
      // AS 'total': a string as the name, as DuckDB takes it (quotes off, doubled ones single,
      // backslashes as written); AS '' DuckDB takes as no alias at all.
      String name = SqlGuard.restore(raw.substring(1, raw.length() - 1).replace("''", "'"));
      return name.isEmpty() ? null : name;
    }
    return Ident.parse(raw).text();
  }

  private static void requireNoAlias(String alias, String what) {
    if (alias != null) {
      throw SafeText.invalid("query.syntax", "syntax error: " + what + " cannot have an alias");
    }
  }

  private static Output column(DeclaredColumn c, String alias) {
    if (!c.type().projectable()) {
      throw SafeText.unsupported(
              "unsupported: column " + SafeText.ident(c.name()) + " of type " + c.type()
                  + " cannot be returned as int64")
          .with(SafeText.fact("column", c.name()))
          .with("type", c.type().name());
    }
    return new Output(alias != null ? alias : c.name(), c.nullable(), OutputKind.COLUMN, c.name(),
        c.type());
  }

  private static Output aggregate(Function f, String alias, TableScope scope) {
    String name = f.getMultipartName() != null && f.getMultipartName().size() == 1
        ? f.getName().toUpperCase(Locale.ROOT) : "";
    if (!name.equals("SUM") && !name.equals("COUNT")) {
      throw SafeText.unsupported("unsupported: function " + SafeText.fragment(f.getName()));
    }
    if (f.isDistinct() || f.isUnique()) {
      throw SafeText.unsupported("unsupported: " + name + "(DISTINCT ...)");
    }
    if (f.getParameters() == null || f.getParameters().size() != 1) {
      throw SafeText.invalid("query.invalid_aggregate", name + " takes exactly one argument");
    }
    requireCanonical(f, f.getName() + "(" + f.getParameters() + ")", "modifier in " + name);
    String outputName = alias != null ? alias : f.toString();
    Expression argument = unwrap(f.getParameters().get(0));
    if (argument instanceof AllColumns star && !(argument instanceof AllTableColumns)
        && star.toString().equals("*")) {
      if (!name.equals("COUNT")) {
        throw SafeText.invalid("query.invalid_aggregate", name + "(*) is not defined");
      }
      return new Output(outputName, false, OutputKind.COUNT_STAR, null, null);
    }
    if (!(argument instanceof Column ref)) {
      throw SafeText.unsupported("unsupported: " + name + " argument must be a column");
    }
    DeclaredColumn c = scope.resolve(ref);
    if (name.equals("COUNT")) {
      return new Output(outputName, false, OutputKind.COUNT_COLUMN, c.name(), c.type());
    }
    if (!c.type().summable()) {
      throw SafeText.unsupported(
              "unsupported: SUM of column " + SafeText.ident(c.name()) + " of type " + c.type())
          .with(SafeText.fact("column", c.name()))
          .with("type", c.type().name());
    }
    return new Output(outputName, true, OutputKind.SUM, c.name(), c.type());
  }

  private static Long limit(Limit limit) {
    if (limit == null) {
      return null;
    }
    if (limit.isLimitAll() || limit.isLimitNull() || limit.getByExpressions() != null
        || limit.getRowCount() == null) {
      throw SafeText.unsupported("unsupported: LIMIT form (use LIMIT n)");
    }
    BigInteger n = Literals.integer(limit.getRowCount());
    if (n == null) {
      throw SafeText.unsupported("unsupported: LIMIT must be an integer literal");
    }
    if (n.signum() < 0 || n.bitLength() > 63) {
      throw SafeText.invalid("query.invalid_literal", "LIMIT must be between 0 and 2^63-1")
          .with(SafeText.fact("literal", n.toString()));
    }
    return n.longValue();
  }

  /** Drops redundant parentheses around a single expression. */
  static Expression unwrap(Expression e) {
    Expression x = e;
    while (x instanceof ParenthesedExpressionList<?> p && p.size() == 1) {
      x = p.get(0);
    }
    return x;
  }

  /** A short name for an expression kind outside the profile, for messages. */
  static String describe(Expression e) {
    if (e instanceof Select) {
      return "subquery";
    } else if (e instanceof AnalyticExpression) {
      return "window or filtered aggregate";
    } else if (e instanceof Function f) {
      return "function " + SafeText.fragment(f.getName());
    } else if (e instanceof CaseExpression) {
      return "CASE";
    } else if (e instanceof CastExpression) {
      return "CAST";
    } else if (e instanceof LikeExpression) {
      return "LIKE";
    } else if (e instanceof JdbcParameter || e instanceof JdbcNamedParameter) {
      return "parameter";
    } else if (e instanceof ParenthesedExpressionList<?>) {
      return "row value";
    } else if (e instanceof BinaryExpression b) {
      return "operator " + SafeText.fragment(b.getStringExpression());
    } else if (e instanceof Column) {
      return "column";
    }
    return e.getClass().getSimpleName().endsWith("Value")
        ? "constant" : "expression " + sqlWords(e, "Expression");
  }

  /**
   * A parser node's kind in SQL's words ({@code CreateTable} reads {@code CREATE TABLE}, {@code
   * IntervalExpression} {@code INTERVAL}): the caller wrote SQL, not the parser's class names.
   */
  static String sqlWords(Object node, String suffix) {
    String name = node.getClass().getSimpleName();
    if (name.endsWith(suffix) && name.length() > suffix.length()) {
      name = name.substring(0, name.length() - suffix.length());
    }
    return name.replaceAll("(?<=[a-z0-9])(?=[A-Z])", " ").toUpperCase(Locale.ROOT);
  }
}
