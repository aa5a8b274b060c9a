package io.transit.flight.it;

import java.nio.file.Path;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * One real daemon (fresh demo state directory) and one Java Flight SQL client per test class;
 * after every test the daemon must hold no stream and no byte, and at the end it must close
 * cleanly.
 */
abstract class DaemonTestBase {
  // Removed by JUnit after the class, keys and credentials with it.
  @TempDir static Path stateDir;
  static GatewayFixture gw;
  static FlightSqlClient client;

  @BeforeAll
  static void startDaemon() throws Exception {
    gw = new GatewayFixture(stateDir);
    client = gw.client();
  }

  @AfterAll
  static void stopDaemon() throws Exception {
    client.close();
    gw.close();
  }

  @AfterEach
  void daemonHoldsNoStreamMemory() throws Exception {
    gw.assertNoStreamMemory();
  }
}
