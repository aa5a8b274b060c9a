package io.transit.flight.query;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import net.sf.jsqlparser.expression.Alias;
import net.sf.jsqlparser.parser.ASTNodeAccess;
import net.sf.jsqlparser.parser.SimpleNode;
import net.sf.jsqlparser.parser.Token;
import net.sf.jsqlparser.schema.Column;
import net.sf.jsqlparser.schema.Table;
import net.sf.jsqlparser.statement.select.AllTableColumns;

/**
 * The caller's published Table as one query sees it: the declared columns with their logical
 * types, and how the query named the Table in FROM (so that qualified column references can be
 * checked). Identifier rules: a quoted identifier matches exactly (never split at dots), an
 * unquoted one case-insensitively ({@link Locale#ROOT} lower case); among several
 * case-insensitive matches an exact-case match wins, otherwise the reference is ambiguous. One instance per compilation; confined to the compiling thread.
 */
final class TableScope {
  /** One declared column; {@code name} is the declared (exact-case) name. */
  record DeclaredColumn(String name, LogicalType type, boolean nullable) {}

  /** An identifier as written: its text without quotes, and whether it was quoted. */
  record Ident(String text, boolean quoted) {
    static Ident parse(String raw) {
      if (raw.length() >= 2) {
        char first = raw.charAt(0);
        char last = raw.charAt(raw.length() - 1);
        String inner = raw.substring(1, raw.length() - 1);
        if (inner.isEmpty() && (first == '"' || first == '`') && first == last) {
          // As DuckDB and PostgreSQL: no name is spelt "".
          throw SafeText.invalid("query.syntax", "syntax error: zero-length quoted identifier");
        }
        if (first == '"' && last == '"') {
          return new Ident(inner.replace("\"\"", "\""), true);
        }
        if (first == '`' && last == '`') {
          return new Ident(inner.replace("``", "`"), true);
        }
      }
      return new Ident(raw, false);
    }

    /**
     * Quoted: exactly. Unquoted: after lower-casing both with {@link Locale#ROOT} — never
     * {@code equalsIgnoreCase}, whose per-character folding makes {@code İD} match {@code id}.
     */
    boolean matches(String declared) {
      return quoted
          ? text.equals(declared)
          : text.toLowerCase(Locale.ROOT).equals(declared.toLowerCase(Locale.ROOT));
    }
  }

  private final TableDeclaration table;
  private final List<DeclaredColumn> columns;
  /** The FROM alias, or null when FROM named the Table without one. */
  private Ident alias;

  private TableScope(TableDeclaration table, List<DeclaredColumn> columns) {
    this.table = table;
    this.columns = columns;
  }

  /** Reads the declaration; an unknown logical type there is a configuration defect. */
  static TableScope of(TableDeclaration table) {
    List<DeclaredColumn> columns = new ArrayList<>(table.getColumnsCount());
    for (ColumnDeclaration c : table.getColumnsList()) {
      LogicalType type;
      try {
        type = LogicalType.valueOf(c.getLogicalType());
      } catch (IllegalArgumentException e) {
        throw SafeText.failure(QueryCode.INTERNAL, "declared column has unknown logical type "
                    + SafeText.fragment(c.getLogicalType()))
            .with(SafeText.fact("column", c.getName()));
      }
      columns.add(new DeclaredColumn(c.getName(), type, c.getNullable()));
    }
    return new TableScope(table, List.copyOf(columns));
  }

  List<DeclaredColumn> columns() {
    return columns;
  }

  /** Checks that FROM names the caller's Table and remembers its alias. */
  void bindFrom(Table from) {
    List<String> parts = written(from, from.getNameParts(), false);
    if (!namesTable(parts)) {
      throw unknownTable(parts);
    }
    Alias a = from.getAlias();
    if (a != null) {
      if (a.getAliasColumns() != null && !a.getAliasColumns().isEmpty()) {
        throw SafeText.unsupported("unsupported: column list in a table alias");
      }
      alias = Ident.parse(a.getName());
    }
  }

  /** Checks the qualifier of {@code t.*}. */
  void checkQualifier(AllTableColumns all) {
    checkQualifier(written(all, all.getTable().getNameParts(), true));
  }

  /** Checks a qualifier such as {@code t} in {@code t.a}; {@code parts} innermost first. */
  private void checkQualifier(List<String> parts) {
    boolean ok;
    if (alias != null) {
      // As in SQL, an alias hides the Table's own name.
      ok = parts.size() == 1 && Ident.parse(parts.get(0)).matches(alias.text());
    } else {
      ok = namesTable(parts);
    }
    if (!ok) {
      throw unknownTable(parts);
    }
  }

  /** Resolves a column reference to its declaration. */
  DeclaredColumn resolve(Column ref) {
    // The parser folds a subscript (c['state'], id[1]) or a COMMENT into the column: answered as
    // the bare column it would read what DuckDB does not.
    if (ref.getArrayConstructor() != null || ref.getCommentText() != null) {
      throw SafeText.unsupported("unsupported: a subscript or comment on a column");
    }
    Table qualifier = ref.getTable();
    if (qualifier != null && qualifier.getName() != null && !qualifier.getNameParts().isEmpty()) {
      List<String> parts = new ArrayList<>(qualifier.getNameParts());
      parts.add(0, ref.getColumnName());
      parts = written(ref, parts, false);
      checkQualifier(parts.subList(1, parts.size()));
    }
    Ident id = Ident.parse(ref.getColumnName());
    DeclaredColumn found = null;
    int matches = 0;
    for (DeclaredColumn c : columns) {
      if (id.matches(c.name())) {
        matches++;
        if (found == null || c.name().equals(id.text())) {
          found = c;
        }
      }
    }
    if (found == null) {
      throw SafeText.invalid("query.unknown_column", "unknown column " + SafeText.ident(id.text()))
          .with(SafeText.fact("column", id.text()));
    }
    if (matches > 1 && !found.name().equals(id.text())) {
      throw SafeText.invalid(
              "query.ambiguous_column",
              "column " + SafeText.ident(id.text()) + " matches several columns; quote it")
          .with(SafeText.fact("column", id.text()));
    }
    return found;
  }

  /**
   * A dotted name's parts, innermost first, as the caller wrote them: read from the parser's
   * tokens, because JSqlParser splits a quoted name at its dots ({@code "a.b"} becomes two
   * parts), which would let {@code "transit.demo.t"} name the Table. {@code parsed} (the
   * parser's own parts) serves when the node carries no tokens. {@code dropLast} drops a
   * trailing {@code *}.
   */
  private static List<String> written(ASTNodeAccess node, List<String> parsed, boolean dropLast) {
    SimpleNode ast = node.getASTNode();
    if (ast == null || ast.jjtGetFirstToken() == null) {
      return parsed;
    }
    List<String> parts = new ArrayList<>();
    Token t = ast.jjtGetFirstToken();
    Token last = ast.jjtGetLastToken();
    while (t != null) {
      parts.add(0, t.image);
      if (t == last || t.next == null || !".".equals(t.next.image) || t.next == last) {
        break;
      }
      t = t.next.next;
    }
    if (dropLast && !parts.isEmpty()) {
      parts.remove(0);
    }
    return parts;
  }

  /** Name parts arrive innermost first: table, schema, catalog. */
  private boolean namesTable(List<String> parts) {
    if (parts.isEmpty() || parts.size() > 3) {
      return false;
    }
    String[] declared = {table.getTable(), table.getDbSchema(), table.getCatalog()};
    for (int i = 0; i < parts.size(); i++) {
      String part = parts.get(i);
      if (part == null || part.isEmpty() || !Ident.parse(part).matches(declared[i])) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code parts} innermost first. The whole name as written, qualifiers included: naming only
   * its last part told a caller who wrote {@code public.trips} that {@code trips}, a Table it can
   * list, does not exist.
   */
  private static GatewayException unknownTable(List<String> parts) {
    List<String> outermostFirst = new ArrayList<>();
    for (String part : parts) {
      outermostFirst.add(0, part == null ? "" : Ident.parse(part).text());
    }
    String name = String.join(".", outermostFirst);
    return SafeText.invalid("query.unknown_table", "unknown table " + SafeText.ident(name))
        .with(SafeText.fact("table", name));
  }
}
