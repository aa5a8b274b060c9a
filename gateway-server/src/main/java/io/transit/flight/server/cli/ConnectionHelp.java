package io.transit.flight.server.cli;

import io.transit.flight.server.config.ResolvedConfig;
import java.io.PrintStream;
import java.nio.file.Path;

/** Prints how to connect: URI, where each credential file is, and the sequence header. */
final class ConnectionHelp {
  private ConnectionHelp() {}

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
    String table = cfg.publications().get(first.publication()).declaration().getTable();
    out.println();
    out.println("Python (pip install ./clients/python; sequences and retries handled, docs/python-client.md):");
    out.println("  import transit_flight");
    out.println("  conn = transit_flight.connect('" + uri + "', token_file='" + first.credentialFile() + "')");
    out.println("  print(conn.execute('SELECT SUM(a) FROM " + table + "'))");
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
    out.println("  cur.execute('SELECT SUM(a) FROM " + table + "'); print(cur.fetch_arrow_table())");
    out.println();
    out.println("Every statement needs x-transit-request-sequence: start at the caller's next sequence");
    out.println("(1 on a fresh deployment, or the 'transit.next_sequence' session option).");
    out.flush();
  }
}
