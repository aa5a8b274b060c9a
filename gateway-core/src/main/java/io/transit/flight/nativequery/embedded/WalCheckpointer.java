package io.transit.flight.nativequery.embedded;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies the SQLite journal's WAL back into the database file on a thread of its own, so that no
 * statement's commit waits for it. Left to SQLite, the commit that took the WAL past 1,000 pages
 * ran the checkpoint itself — writing those pages into the database file and fsyncing it — before
 * it returned: one statement in about thirty paid for it (2026-12-02, docs/performance.md).
 *
 * <p>The journal's connection checkpoints only as a backstop ({@link #BACKSTOP_PAGES}, when this
 * thread fell far behind); every {@link #COMMITS_PER_CHECKPOINT} commits that wrote, {@link
 * #wrote} queues one {@code PRAGMA wal_checkpoint(PASSIVE)} on this class's connection: it copies
 * what no reader still needs and never waits for a reader or a writer, so commits go on meanwhile.
 * A checkpoint copies only committed frames, so what a kill -9 or a power loss keeps is unchanged.
 *
 * <p>Threads: built and closed on the thread that opens and closes the journal; {@link #wrote} is
 * called by committing threads under the journal's monitor; the checkpoints run on the single
 * {@code journal-checkpoint} thread, the only user of {@link #connection} until {@link #close}
 * has stopped it.
 */
final class WalCheckpointer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WalCheckpointer.class);
  /** Commits that wrote between two checkpoints: about SQLite's 1,000 pages for statements. */
  static final int COMMITS_PER_CHECKPOINT = 128;
  /** The journal connection's own {@code wal_autocheckpoint}: only when this thread lags. */
  static final int BACKSTOP_PAGES = 8_000;

  private final Connection connection; // journal-checkpoint thread only, then close()
  private final ExecutorService thread;
  private final AtomicBoolean queued = new AtomicBoolean();
  private final AtomicLong done = new AtomicLong();
  // Touched only under the journal's monitor (wrote()).
  private int writesSince;
  // journal-checkpoint thread only: a failure is logged once per run of failures, not at every
  // attempt.
  private boolean failureLogged;

  private WalCheckpointer(Connection connection) {
    this.connection = connection;
    this.thread = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
        new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "journal-checkpoint");
          t.setDaemon(true);
          return t;
        });
  }

  /** A checkpointer with its own connection to the journal file {@code file}. */
  static WalCheckpointer open(Path file) throws SQLException {
    // synchronous=FULL: the checkpoint fsyncs the database file before the WAL may be reused.
    return new WalCheckpointer(SqliteJournal.sideConnection(file, "PRAGMA synchronous=FULL",
        "PRAGMA wal_autocheckpoint=0"));
  }

  /** A commit that wrote frames; every {@link #COMMITS_PER_CHECKPOINT}th queues a checkpoint. */
  void wrote() {
    if (++writesSince < COMMITS_PER_CHECKPOINT) {
      return;
    }
    writesSince = 0;
    if (queued.compareAndSet(false, true)) {
      try {
        thread.execute(this::checkpoint);
      } catch (java.util.concurrent.RejectedExecutionException closing) {
        queued.set(false); // closed: the journal's last close checkpoints
      }
    }
  }

  /** Checkpoints completed so far (tests). */
  long checkpoints() {
    return done.get();
  }

  private void checkpoint() {
    queued.set(false);
    try (Statement s = connection.createStatement()) {
      s.execute("PRAGMA wal_checkpoint(PASSIVE)");
      done.incrementAndGet();
      if (failureLogged) {
        // Logged once per episode: the next failure, after this success, is reported again.
        failureLogged = false;
        log.info("journal checkpoint succeeded again");
      }
    } catch (SQLException e) {
      // Busy (another connection checkpoints) or an I/O failure: the next request tries again,
      // and the backstop keeps the WAL bounded meanwhile.
      if (!failureLogged) {
        failureLogged = true;
        log.warn("journal checkpoint failed (the commits' own backstop remains): {}",
            e.getMessage());
      }
    }
  }

  /**
   * Stops the checkpoint thread and closes its connection; a thread still inside a checkpoint
   * after 10 s keeps the connection, which the process's exit closes: closing it under a running
   * statement would break the rule that the thread is its only user (until 2026-12-07 it did).
   */
  @Override
  public void close() throws SQLException {
    thread.shutdown();
    boolean stopped = false;
    try {
      stopped = thread.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!stopped) {
      log.warn("journal checkpoint still running after 10 s; its connection is left to the exit");
      return;
    }
    connection.close();
  }
}
