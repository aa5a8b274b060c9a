package io.transit.flight.nativequery.embedded;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.io.TempDir;

/** The {@link JournalStore} contract against the embedded SQLite journal. */
class SqliteJournalContractTest extends JournalStoreContract {
  @TempDir Path dir;

  @Override
  protected JournalStore openFresh() throws Exception {
    return SqliteJournal.open(dir.resolve("journal.sqlite"));
  }

  @Override
  protected JournalStore reopen() throws Exception {
    return SqliteJournal.open(dir.resolve("journal.sqlite"));
  }

  @Override
  protected long rows(String table) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("journal.sqlite"));
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
      r.next();
      return r.getLong(1);
    }
  }
}
