package io.transit.flight.nativequery.embedded;

import io.transit.flight.nativequery.postgres.PostgresCluster;
import io.transit.flight.nativequery.postgres.PostgresJournal;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The {@link JournalStore} contract against the shared PostgreSQL journal, on a private cluster
 * this class starts (skipped, loudly, only when the PostgreSQL binaries are missing); each test
 * gets a fresh database.
 */
class PostgresJournalContractTest extends JournalStoreContract {
  private static PostgresCluster cluster;
  private String database;

  @BeforeAll
  static void startCluster() throws Exception {
    cluster = PostgresCluster.startOrSkip();
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected JournalStore openFresh() throws Exception {
    database = cluster.createDatabase();
    return PostgresJournal.open(cluster.settings(database));
  }

  @Override
  protected JournalStore reopen() throws Exception {
    return PostgresJournal.open(cluster.settings(database));
  }
}
