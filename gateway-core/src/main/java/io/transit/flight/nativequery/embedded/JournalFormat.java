package io.transit.flight.nativequery.embedded;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The journal's compatibility floor at open ({@link JournalStore}'s "Formats"): the {@code
 * reader_format} row of the {@code counters} table, in SQL both journals run. Stateless; called
 * on the opening thread, inside a transaction of the caller's on {@code connection}.
 */
public final class JournalFormat {
  static final String ROW = "reader_format";

  private JournalFormat() {}

  /**
   * Raises the floor to {@link JournalStore#FORMAT} when it is lower or missing, then reads it
   * and throws {@link JournalStore.TooNew} when it is higher. Written before it is read, each
   * write conditional: no window between the read and a write for a newer replica's raise to fall
   * into, and a refused build has written nothing. {@code journal} names the journal for the
   * operator (a path, or a database without credentials).
   */
  public static void admit(Connection connection, String journal) throws SQLException {
    try (Statement s = connection.createStatement()) {
      s.executeUpdate("INSERT INTO counters (name, value) VALUES ('" + ROW + "', "
          + JournalStore.FORMAT + ") ON CONFLICT (name) DO NOTHING");
      s.executeUpdate("UPDATE counters SET value = " + JournalStore.FORMAT
          + " WHERE name = '" + ROW + "' AND value < " + JournalStore.FORMAT);
    }
    try (PreparedStatement p =
            connection.prepareStatement("SELECT value FROM counters WHERE name = ?")) {
      p.setString(1, ROW);
      try (ResultSet r = p.executeQuery()) {
        long floor = r.next() ? r.getLong(1) : JournalStore.FORMAT;
        if (floor > JournalStore.FORMAT) {
          throw new JournalStore.TooNew(journal, floor);
        }
      }
    }
  }
}
