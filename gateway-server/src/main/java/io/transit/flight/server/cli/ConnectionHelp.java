package io.transit.flight.server.cli;

import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.server.config.ResolvedConfig;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Prints how to connect: URI, where each credential file is, and the sequence header, with
 * snippets whose statement runs on the first caller's Table as published ({@link #exampleSql})
 * and an install hint naming the Python client where this installation has it
 * ({@link #pythonClient}: {@code clients/python} of the checkout or of the distribution archive).
 */
final class ConnectionHelp {
  private ConnectionHelp() {}

  /**
   * Words an unquoted name may not be (SQL's reserved words the parser refuses as a column or a
   * table): such a name, and any other than lower-case letters, digits and underscores, is
   * printed quoted.
   */
  private static final Set<String> RESERVED = Set.of("all", "and", "any", "as", "asc", "between",
      "both", "by", "case", "cast", "check", "column", "constraint", "create", "cross", "current",
      "default", "delete", "desc", "distinct", "drop", "else", "end", "except", "exists", "false",
      "fetch", "for", "foreign", "from", "full", "group", "having", "in", "inner", "insert",
      "intersect", "interval", "into", "is", "join", "key", "leading", "left", "like", "limit",
      "natural", "not", "null", "of", "offset", "on", "or", "order", "outer", "primary",
      "references", "right", "select", "set", "some", "table", "then", "to", "top", "trailing",
      "true", "union", "unique", "update", "using", "values", "when", "where", "with", "window");

  static void print(PrintStream out, ResolvedConfig cfg, int port, Path configFile, boolean demo) {
    ResolvedConfig.Transport t = cfg.transport();
    String uri = t.tcp()
        ? (t.tls() ? "grpc+tls://" : "grpc://") + cfg.host() + ":" + port
        : "grpc+unix://" + t.unixSocket();
    out.println();
    out.println("Transit Flight Gateway is serving " + uri + (demo ? " (demo deployment)" : ""));
    if (t.tcp() && t.unixSocket() != null) {
      out.println("Transit Flight Gateway is serving grpc+unix://" + t.unixSocket());
    }
    out.println("  config:     " + configFile.toAbsolutePath());
    for (ResolvedConfig.Caller c : cfg.callers()) {
      ResolvedConfig.Publication p = cfg.publications().get(c.publication());
      out.println("  caller " + c.name() + ": table " + p.declaration().getCatalog() + "."
          + p.declaration().getDbSchema() + "." + p.declaration().getTable()
          + ", credential in " + c.credentialFile());
    }
    ResolvedConfig.Caller first = cfg.callers().get(0);
    String sql = python(exampleSql(cfg.publications().get(first.publication()).declaration()));
    out.println();
    out.println(pythonClient(ConnectionHelp.class)
        .map(c -> "Python (pip install " + shell(c.toString()) + "; sequences and retries handled, "
            + c.resolve("README.md") + "):")
        .orElse("Python (the transit_flight package, clients/python in the source repository;"
            + " sequences and retries handled):"));
    out.println("  import transit_flight");
    out.println("  conn = transit_flight.connect('" + uri + "', token_file='" + first.credentialFile() + "')");
    out.println("  print(conn.execute(" + sql + "))");
    out.println();
    out.println("PyArrow:");
    out.println("  import pyarrow.flight as fl, json");
    out.println("  token = open('" + first.credentialFile() + "').read().strip()");
    out.println("  client = fl.FlightClient('" + uri + "')");
    out.println("  opts = fl.FlightCallOptions(headers=[(b'authorization', f'Bearer {token}'.encode()),");
    out.println("                                       (b'x-transit-request-sequence', b'1')])");
    out.println("  # a Flight SQL CommandStatementQuery: transit_flight.flightsql encodes it (docs/clients.md#pyarrow)");
    out.println("  # next statement: json.loads(info.app_metadata)['next_sequence']");
    out.println();
    out.println("ADBC (Python DBAPI):");
    out.println("  import adbc_driver_flightsql.dbapi as f");
    out.println("  token = open('" + first.credentialFile() + "').read().strip()");
    out.println("  conn = f.connect('" + uri + "', autocommit=True, db_kwargs={'adbc.flight.sql.authorization_header': f'Bearer {token}'})");
    out.println("  cur = conn.cursor()");
    out.println("  cur.adbc_statement.set_options(**{'adbc.flight.sql.rpc.call_header.x-transit-request-sequence': '1'})");
    out.println("  cur.execute(" + sql + "); print(cur.fetch_arrow_table())");
    out.println();
    out.println("Every statement needs x-transit-request-sequence: start at the caller's next sequence");
    out.println("(1 on a fresh deployment, or the 'transit.next_sequence' session option).");
    out.flush();
  }

  /**
   * A statement the Table answers as published: its row count and the sum of its first column
   * that has one (INT64), by the Table's and the column's own names (until 2026-12-07 the help
   * printed the demo's {@code SUM(a)} for every Table, refused {@code query.unknown_column}
   * elsewhere).
   */
  static String exampleSql(TableDeclaration table) {
    String sum = "";
    for (ColumnDeclaration c : table.getColumnsList()) {
      if (summable(c.getLogicalType())) {
        sum = ", SUM(" + identifier(c.getName()) + ")";
        break;
      }
    }
    return "SELECT COUNT(*)" + sum + " FROM " + identifier(table.getTable());
  }

  private static boolean summable(String logicalType) {
    try {
      return LogicalType.valueOf(logicalType).summable();
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** {@code name} as SQL spells it: bare when it can be, else quoted (exact, docs/queries.md). */
  static String identifier(String name) {
    return name.matches("[a-z_][a-z0-9_]*") && !RESERVED.contains(name.toLowerCase(Locale.ROOT))
        ? name : '"' + name.replace("\"", "\"\"") + '"';
  }

  /** {@code text} as a Python string literal. */
  static String python(String text) {
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  /** {@code text} as one shell word. */
  private static String shell(String text) {
    return text.matches("[A-Za-z0-9_@%+=:,./-]+") ? text : "'" + text.replace("'", "'\\''") + "'";
  }

  /**
   * The Python client's source ({@code clients/python}, its {@code pyproject.toml} there) in the
   * installation {@code anchor}'s code was loaded from: the checkout holding {@code
   * gateway-server/target}, or the distribution archive holding {@code lib/} (it ships the
   * client). Empty when neither has it, so the help never names a directory that is not there.
   */
  static Optional<Path> pythonClient(Class<?> anchor) {
    try {
      CodeSource source = anchor.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) {
        return Optional.empty();
      }
      Path dir = Path.of(source.getLocation().toURI()).toAbsolutePath().getParent();
      // lib/ (the archive), target/ (the checkout's jar or classes), then gateway-server/.
      for (int up = 0; up < 3 && dir != null; up++, dir = dir.getParent()) {
        Path client = dir.resolve("clients").resolve("python");
        if (Files.isRegularFile(client.resolve("pyproject.toml"))) {
          return Optional.of(client);
        }
      }
    } catch (java.net.URISyntaxException | RuntimeException e) {
      // No installation directory to look in.
    }
    return Optional.empty();
  }
}
