package io.transit.flight.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConnectionHelpTest {
  private static TableDeclaration table(String name, String... columns) {
    TableDeclaration.Builder t = TableDeclaration.newBuilder().setTable(name);
    for (int i = 0; i < columns.length; i += 2) {
      t.addColumns(ColumnDeclaration.newBuilder().setName(columns[i])
          .setLogicalType(columns[i + 1]));
    }
    return t.build();
  }

  @Test
  void theExampleStatementNamesTheTablesOwnColumns() {
    // The first summable column, not the demo's a (until 2026-12-07: SUM(a) for every Table).
    assertEquals("SELECT COUNT(*), SUM(id) FROM readings",
        ConnectionHelp.exampleSql(table("readings", "v", "FLOAT64", "id", "INT64", "n", "INT64")));
    assertEquals("SELECT COUNT(*) FROM readings",
        ConnectionHelp.exampleSql(table("readings", "v", "FLOAT64", "u", "UINT64")));
    // A name that is not a plain lower-case word, or a reserved one, is quoted (exact match).
    assertEquals("SELECT COUNT(*), SUM(\"Order\") FROM \"select\"",
        ConnectionHelp.exampleSql(table("select", "Order", "INT64")));
    assertEquals("\"a\"\"b\"", ConnectionHelp.identifier("a\"b"));
    assertEquals("'SELECT COUNT(*) FROM \"it\\'s\"'",
        ConnectionHelp.python(ConnectionHelp.exampleSql(table("it's", "v", "FLOAT64"))));
  }

  @Test
  void theInstallHintNamesTheCheckoutsClient() throws Exception {
    // Run from gateway-server/target/classes: the checkout's clients/python.
    Path client = ConnectionHelp.pythonClient(ConnectionHelp.class).orElseThrow();
    assertEquals(Path.of("..", "clients", "python").toRealPath(), client.toRealPath());
    assertTrue(Files.isRegularFile(client.resolve("README.md")));
    // A class from a jar outside any installation: nothing named.
    assertTrue(ConnectionHelp.pythonClient(org.junit.jupiter.api.Test.class).isEmpty());
  }
}
