package io.transit.flight.nativequery.embedded;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reusable DuckDB sessions for the query runners: a connection to the shared (immutable) database
 * and its prepared statements by translated SQL. Duplicating a connection and preparing a
 * statement cost more than executing a small aggregate, and the translated SQL repeats (literals
 * are bound parameters), so each run borrows a session instead of building both.
 *
 * <p>Threads: {@link #borrow} and {@link #giveBack} from query runner threads; a borrowed session
 * is confined to its borrower until given back. At most one session per concurrently running
 * query exists, so the pool is bounded by the engine's execution threads. A session whose run
 * failed in DuckDB is closed rather than given back ({@link #discard}). {@link #close} (engine
 * close, after the runners stopped) closes the idle sessions; a session given back later is closed.
 *
 * <p>A runner marks the statement it executes ({@link #running}, then {@link #ended}) so that the
 * engine's close, once its drain has waited long enough, can stop what is still inside DuckDB
 * ({@link #cancelRunning}, on the closing thread): JDBC's {@code cancel} from another thread is
 * the one way to end a native query, which a Java interrupt does not reach.
 */
final class DuckSessions implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DuckSessions.class);
  /** Distinct translated statements kept per session; the rest are prepared per run. */
  static final int STATEMENTS_PER_SESSION = 32;

  /** One connection and its statements; used by one runner at a time. */
  static final class Session implements AutoCloseable {
    private final Connection connection;
    // Access order: the eldest entry is the least recently executed statement.
    private final LinkedHashMap<String, PreparedStatement> statements =
        new LinkedHashMap<>(16, 0.75f, true);

    private Session(Connection connection) {
      this.connection = connection;
    }

    /** The prepared statement for {@code sql}; the caller binds every parameter before use. */
    PreparedStatement prepared(String sql) throws SQLException {
      PreparedStatement p = statements.get(sql);
      if (p == null) {
        p = connection.prepareStatement(sql);
        statements.put(sql, p);
        if (statements.size() > STATEMENTS_PER_SESSION) {
          Iterator<Map.Entry<String, PreparedStatement>> eldest = statements.entrySet().iterator();
          PreparedStatement evicted = eldest.next().getValue();
          eldest.remove();
          evicted.close();
        }
      }
      return p;
    }

    int statementCount() {
      return statements.size();
    }

    @Override
    public void close() {
      for (PreparedStatement p : statements.values()) {
        try {
          p.close();
        } catch (SQLException e) {
          log.debug("closing a DuckDB statement failed", e);
        }
      }
      statements.clear();
      try {
        connection.close();
      } catch (SQLException e) {
        log.debug("closing a DuckDB connection failed", e);
      }
    }
  }

  private final DuckTables tables;
  // @GuardedBy("this")
  private final ArrayDeque<Session> idle = new ArrayDeque<>();
  // @GuardedBy("this")
  private boolean closed;
  // @GuardedBy("this"): the statements runners are executing or reading now.
  private final Set<PreparedStatement> running =
      Collections.newSetFromMap(new IdentityHashMap<>());
  // Written under this monitor, once, by cancelRunning (no statement starts after it); read
  // without it by runners between batches.
  private volatile boolean cancelling;

  DuckSessions(DuckTables tables) {
    this.tables = tables;
  }

  /** An idle session, or a new one on a fresh connection. */
  Session borrow() throws SQLException {
    synchronized (this) {
      Session s = idle.pollFirst();
      if (s != null) {
        return s;
      }
    }
    return new Session(tables.connect());
  }

  /** Returns a session whose run ended normally (its result sets closed). */
  void giveBack(Session s) {
    synchronized (this) {
      if (!closed) {
        idle.addFirst(s);
        return;
      }
    }
    s.close();
  }

  /** Closes a session whose state is unknown after a failed run. */
  void discard(Session s) {
    s.close();
  }

  /**
   * Marks {@code p} as executing on the calling runner until {@link #ended}; refused (an {@link
   * SQLException}) once {@link #cancelRunning} ran, so nothing new starts inside DuckDB then.
   */
  void running(PreparedStatement p) throws SQLException {
    synchronized (this) {
      if (!cancelling) {
        running.add(p);
        return;
      }
    }
    throw cancelled();
  }

  /** {@code p}'s execution and the read of its result are over (the runner's finally). */
  synchronized void ended(PreparedStatement p) {
    running.remove(p);
  }

  /** True once {@link #cancelRunning} ran: a runner reading a result stops at its next batch. */
  boolean cancelling() {
    return cancelling;
  }

  /** The failure a statement gets when the engine's close cancelled it or refused to start it. */
  static SQLException cancelled() {
    return new SQLException("cancelled: the engine is closing");
  }

  /**
   * Cancels every statement inside DuckDB now and refuses new ones; returns how many were asked to
   * stop. Called on the engine's closing thread, repeatedly while it waits: JDBC's cancel reaches
   * only a statement already executing, so one marked running just before it executes is caught
   * by the next call. The cancelled run fails with an SQLException on its own thread.
   */
  int cancelRunning() {
    List<PreparedStatement> now;
    synchronized (this) {
      cancelling = true;
      now = new ArrayList<>(running);
    }
    for (PreparedStatement p : now) {
      cancel(p);
    }
    return now.size();
  }

  /**
   * Asks DuckDB to stop {@code p}, from any thread but the one executing it; a statement that
   * ended and was closed meanwhile has nothing left to stop.
   */
  static void cancel(PreparedStatement p) {
    try {
      p.cancel();
    } catch (SQLException e) {
      log.debug("cancelling a DuckDB statement failed", e);
    }
  }

  synchronized int runningCount() {
    return running.size();
  }

  synchronized int idleCount() {
    return idle.size();
  }

  @Override
  public void close() {
    ArrayDeque<Session> toClose;
    synchronized (this) {
      closed = true;
      toClose = new ArrayDeque<>(idle);
      idle.clear();
    }
    toClose.forEach(Session::close);
  }
}
