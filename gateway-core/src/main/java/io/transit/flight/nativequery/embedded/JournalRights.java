package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.RightsLedger;
import java.nio.file.Path;
import java.sql.SQLException;

/**
 * The {@link RightsLedger} over a {@link JournalStore}: each method one transaction of the
 * journal the engine uses, so the embedded default (SQLite) and the shared journal (PostgreSQL)
 * behave alike — except {@link #epoch} on a journal this process alone writes, which answers the
 * epoch it recorded without a read. Any thread.
 */
public final class JournalRights implements RightsLedger, AutoCloseable {
  private final JournalStore journal;
  private final JournalUnavailable unavailable;
  // Set only by openEmbedded: this ledger then owns its journal and closes it.
  private final boolean owner;
  // True when nothing but this ledger publishes to the journal (the engine's own SQLite journal):
  // then the epoch it last published or read is the journal's, and epoch() answers from memory
  // instead of a journal read (which would queue behind fsyncing commits) per decision.
  private final boolean soleWriter;
  // -1 until the first publish or read; written under this object's monitor, read by any thread.
  private volatile long known = -1;

  JournalRights(JournalStore journal, JournalUnavailable unavailable) {
    this(journal, unavailable, false, journal.soleWriter());
  }

  private JournalRights(JournalStore journal, JournalUnavailable unavailable, boolean owner,
      boolean soleWriter) {
    this.journal = journal;
    this.unavailable = unavailable;
    this.owner = owner;
    this.soleWriter = soleWriter;
  }

  /**
   * A ledger on the SQLite journal file {@code file} (created when missing), owning its
   * connection: for tools and tests that need the ledger without an engine.
   */
  public static JournalRights openEmbedded(Path file) throws SQLException, java.io.IOException {
    PrivateFiles.directories(file.toAbsolutePath().getParent());
    // Tools and tests may open several ledgers on one file (replicas in miniature), so no
    // ledger here can tell it is the only writer: each reads the epoch per decision.
    return new JournalRights(SqliteJournal.open(file), new JournalUnavailable(), true, false);
  }

  @Override
  public long publish(byte[] document) {
    byte[] sha256 = Digests.sha256(document);
    try {
      synchronized (this) {
        known = -1; // a commit whose outcome is lost leaves the next epoch() to read it
        long epoch = journal.transaction(() -> journal.publishRights(sha256, document));
        known = epoch;
        return epoch;
      }
    } catch (JournalStore.NotCommitted e) {
      throw unavailable("the rights cannot be recorded in the native journal", e);
    } catch (SQLException e) {
      // The commit was sent and its answer lost: the rights may be in force on every replica.
      GatewayException g = new GatewayException(Cause.UNKNOWN_OUTCOME, "rights.unknown_outcome",
          "the native journal may have recorded the rights: its commit was not acknowledged", e);
      throw e.getSQLState() == null ? g : g.with("sql_state", e.getSQLState());
    }
  }

  @Override
  public long epoch() {
    long k = known;
    if (soleWriter && k >= 0) {
      return k;
    }
    try {
      return journal.readRightsEpoch();
    } catch (SQLException e) {
      throw unavailable("the rights cannot be read from the native journal", e);
    }
  }

  @Override
  public Version current() {
    try {
      return journal.transaction(journal::rights)
          .map(v -> new Version(v.epoch(), v.document()))
          .orElseGet(() -> new Version(0, new byte[0]));
    } catch (SQLException e) {
      throw unavailable("the rights cannot be read from the native journal", e);
    }
  }

  private GatewayException unavailable(String message, SQLException e) {
    return unavailable.of(message, e);
  }


  /** Closes the journal when this ledger opened it; the engine's ledger leaves it to the engine. */
  @Override
  public void close() throws SQLException {
    if (owner) {
      journal.close();
    }
  }
}
