package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.transit.flight.crypto.Digests;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rights ledger reads the epoch per decision unless this process alone writes the journal. */
class JournalRightsTest {
  @TempDir Path dir;

  private static byte[] doc(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void theEnginesOwnJournalAnswersItsEpochFromMemory() throws Exception {
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve("journal.sqlite"))) {
      JournalRights ledger = new JournalRights(journal);
      assertEquals(1, ledger.publish(doc("first")));
      assertEquals(1, ledger.publish(doc("first")), "the same document records no new epoch");
      // A write that did not come through this ledger: impossible on a state directory one
      // daemon owns, so the ledger does not look for it.
      byte[] other = doc("written elsewhere");
      assertEquals(2, journal.transaction(() -> journal.publishRights(Digests.sha256(other), other)));
      assertEquals(1, ledger.epoch());
      assertEquals(3, ledger.publish(doc("second")));
      assertEquals(3, ledger.epoch());
    }
  }

  @Test
  void aLedgerThatMayShareItsJournalReadsTheEpochEveryTime() throws Exception {
    Path file = dir.resolve("journal.sqlite");
    try (JournalRights a = JournalRights.openEmbedded(file);
        JournalRights b = JournalRights.openEmbedded(file)) {
      assertEquals(1, a.publish(doc("first")));
      assertEquals(1, b.epoch());
      assertEquals(2, b.publish(doc("second")));
      assertEquals(2, a.epoch(), "a sees b's epoch without publishing");
    }
  }
}
