package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
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
      JournalRights ledger = new JournalRights(journal, new JournalUnavailable());
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
  void aPublishWhoseCommitIsNotAcknowledgedIsAnUnknownOutcomeNotARefusal() throws Exception {
    try (SqliteJournal journal = SqliteJournal.open(dir.resolve("journal.sqlite"))) {
      JournalRights ledger = new JournalRights(lostAcknowledgements(journal), new JournalUnavailable());
      // Until 2026-12-06 this read as a refusal (query.journal_unavailable) although the
      // journal had recorded the rights, and the reload said the previous ones stayed.
      GatewayException e = assertThrows(GatewayException.class, () -> ledger.publish(doc("new")));
      assertEquals(Cause.UNKNOWN_OUTCOME, e.kind());
      assertEquals("rights.unknown_outcome", e.code());
      assertEquals(1, journal.transaction(journal::rightsEpoch), "the journal recorded them");
      assertEquals(1, ledger.epoch(), "the next decision reads the epoch the journal holds");
    }
  }

  /** {@code journal}, except that each transaction's answer is lost after its commit. */
  private static JournalStore lostAcknowledgements(JournalStore journal) {
    return (JournalStore) Proxy.newProxyInstance(JournalStore.class.getClassLoader(),
        new Class<?>[] {JournalStore.class}, (proxy, method, args) -> {
          Object result;
          try {
            result = method.invoke(journal, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (method.getName().equals("transaction")) {
            throw new SQLException("the connection was lost awaiting the commit's answer");
          }
          return result;
        });
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
