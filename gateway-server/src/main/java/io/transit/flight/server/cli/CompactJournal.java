package io.transit.flight.server.cli;

import io.transit.flight.nativequery.embedded.JournalCompaction;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.server.config.StateLock;
import io.transit.flight.server.ops.LogSetup;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code compact-journal}: gives the file system back the space the SQLite journal keeps after
 * the history bound forgot rows ({@link JournalCompaction}), while no gateway runs on the state
 * directory: it takes the directory's lock, so a running daemon makes it exit 2, and a daemon
 * started meanwhile is refused the lock (exit 2). A PostgreSQL journal is PostgreSQL's to
 * compact. Main thread only.
 */
@Command(name = "compact-journal", mixinStandardHelpOptions = true,
    description = "Give back the space the SQLite journal no longer uses (the gateway stopped).")
final class CompactJournal implements Callable<Integer> {
  @Mixin ConfigFile config = new ConfigFile();

  @Override
  public Integer call() throws ConfigException, IOException {
    LogSetup.apply("warn", "text");
    ResolvedConfig cfg = Main.load(config.path, null);
    if (cfg.journal().shared()) {
      throw new ConfigException("journal.kind is postgresql: the database reclaims its own space"
          + " (autovacuum; VACUUM FULL to shrink the files), see docs/operations.md");
    }
    StateDirectory state = new StateDirectory(cfg.stateDir(), new SecureRandom());
    JournalCompaction.Result r;
    try (StateLock lock = StateLock.acquire(cfg.stateDir())) {
      // The compacted copy replaces the journal and belongs to whoever runs this: run by another
      // user (sudo), it would leave a journal the daemon cannot open at its next start.
      Path journal = state.engineDir().resolve("journal.sqlite");
      String me = System.getProperty("user.name");
      if (Files.exists(journal) && !Files.getOwner(journal).getName().equals(me)) {
        throw new ConfigException(journal + " belongs to " + Files.getOwner(journal).getName()
            + ", not " + me + ": run compact-journal as the daemon's user");
      }
      r = JournalCompaction.compact(state.engineDir());
    } catch (SQLException e) {
      throw new IOException("the journal could not be compacted: " + e.getMessage(), e);
    }
    System.out.printf("journal compacted: %d bytes -> %d bytes (%d free pages given back)%n",
        r.bytesBefore(), r.bytesAfter(), r.freePagesBefore());
    return Main.OK;
  }
}
