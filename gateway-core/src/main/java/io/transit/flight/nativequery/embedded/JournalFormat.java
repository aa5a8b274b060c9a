package io.transit.flight.nativequery.embedded;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The journal's compatibility floor at open ({@link JournalStore}'s "Formats"). PostgreSQL keeps
 * it in the {@code reader_format} row of its {@code counters} table ({@link #admit}); SQLite in
 * its database header's {@code user_version} ({@link #admitSqlite}), SQLite's own slot for it:
 * the open of a current journal then writes no page at all, and that of a new one only the
 * header, which creating the schema writes anyway. (A counters row written at open changed which
 * WAL frames a later commit can reuse: on a file system filled to the last byte, the retention
 * sweep's first release then fitted into reused frames, where test_retention_disk.py's full-disk
 * case expects it to need the reserve.) Stateless; called on the opening thread, inside a
 * transaction of the caller's.
 */
public final class JournalFormat {
  static final String ROW = "reader_format";

  private JournalFormat() {}

  /**
   * The shared journal's floor, the {@code reader_format} row (migration V9 inserts it): raised to
   * {@link JournalStore#FORMAT} when lower or missing, then a higher one refused with {@link
   * JournalStore.TooNew}. A current floor is only read. The writes are conditional, so the floor is
   * never lowered. A newer replica raising it just after this read is a replica raising it while
   * this one already runs, which the floor does not stop (see {@link JournalStore}'s "Formats").
   * {@code journal} names the journal for the operator (the database without credentials).
   */
  public static void admit(Connection connection, String journal) throws SQLException {
    Long floor = floor(connection);
    if (floor == null || floor < JournalStore.FORMAT) {
      try (Statement s = connection.createStatement()) {
        s.executeUpdate("INSERT INTO counters (name, value) VALUES ('" + ROW + "', "
            + JournalStore.FORMAT + ") ON CONFLICT (name) DO NOTHING");
        s.executeUpdate("UPDATE counters SET value = " + JournalStore.FORMAT
            + " WHERE name = '" + ROW + "' AND value < " + JournalStore.FORMAT);
      }
      floor = floor(connection);
    }
    check(floor == null ? JournalStore.FORMAT : floor, journal);
  }

  /** The recorded floor, or null when the journal has none yet. */
  private static Long floor(Connection connection) throws SQLException {
    try (PreparedStatement p =
            connection.prepareStatement("SELECT value FROM counters WHERE name = ?")) {
      p.setString(1, ROW);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? r.getLong(1) : null;
      }
    }
  }

  /**
   * {@link #admit} for the embedded journal, on the statement of its open's transaction: the
   * header's {@code user_version} (0 in a journal from before the floor) raised to {@link
   * JournalStore#FORMAT} when lower, a higher one refused before anything is written.
   */
  static void admitSqlite(Statement s, String journal) throws SQLException {
    long floor;
    try (ResultSet r = s.executeQuery("PRAGMA user_version")) {
      floor = r.next() ? r.getLong(1) : 0;
    }
    check(floor, journal);
    if (floor < JournalStore.FORMAT) {
      s.execute("PRAGMA user_version = " + JournalStore.FORMAT);
    }
  }

  private static void check(long floor, String journal) throws JournalStore.TooNew {
    if (floor > JournalStore.FORMAT) {
      throw new JournalStore.TooNew(journal, floor);
    }
  }
}
