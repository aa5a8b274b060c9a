package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.RightsLedger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;

/**
 * The {@link RightsLedger} over a {@link JournalStore}: each method one transaction of the
 * journal the engine uses, so the embedded default (SQLite) and the shared journal (PostgreSQL)
 * behave alike. Stateless apart from the journal; any thread.
 */
public final class JournalRights implements RightsLedger, AutoCloseable {
  private final JournalStore journal;
  // Set only by openEmbedded: this ledger then owns its journal and closes it.
  private final boolean owner;

  JournalRights(JournalStore journal) {
    this(journal, false);
  }

  private JournalRights(JournalStore journal, boolean owner) {
    this.journal = journal;
    this.owner = owner;
  }

  /**
   * A ledger on the SQLite journal file {@code file} (created when missing), owning its
   * connection: for tools and tests that need the ledger without an engine.
   */
  public static JournalRights openEmbedded(Path file) throws SQLException, java.io.IOException {
    Files.createDirectories(file.toAbsolutePath().getParent());
    return new JournalRights(SqliteJournal.open(file), true);
  }

  @Override
  public long publish(byte[] document) {
    byte[] sha256 = sha256(document);
    try {
      return journal.transaction(() -> journal.publishRights(sha256, document));
    } catch (SQLException e) {
      throw unavailable("the rights cannot be recorded in the native journal", e);
    }
  }

  @Override
  public long epoch() {
    try {
      return journal.transaction(journal::rightsEpoch);
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

  private static GatewayException unavailable(String message, SQLException e) {
    GatewayException g =
        new GatewayException(Cause.TRANSPORT, "query.journal_unavailable", message, e);
    return e.getSQLState() == null ? g : g.with("sql_state", e.getSQLState());
  }

  private static byte[] sha256(byte[] document) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(document);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Closes the journal when this ledger opened it; the engine's ledger leaves it to the engine. */
  @Override
  public void close() throws SQLException {
    if (owner) {
      journal.close();
    }
  }
}
