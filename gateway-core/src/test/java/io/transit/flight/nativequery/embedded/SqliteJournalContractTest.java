package io.transit.flight.nativequery.embedded;

import java.nio.file.Path;
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
}
