package io.transit.flight.server.cli;

import io.transit.flight.nativequery.embedded.PublicationCheck;
import io.transit.flight.server.Bindings;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateAccess;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.server.ops.LogSetup;
import io.transit.flight.server.ops.OpsSettings;
import io.transit.flight.server.transport.Listeners;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code check-config}: what {@code run} would refuse in the configuration, without serving or
 * writing anything — the file, the {@code ops} section, every data file's presence, the TLS
 * certificate and key as the listener loads them, each publication opened by the engine's own
 * check ({@link PublicationCheck}: declared columns against the file's schema), the state
 * directory as the running user may use it ({@link StateAccess}: what a start creates, locks,
 * restricts and lists there) and the keys and credentials that exist
 * ({@link Bindings#checkExistingSecrets}). Main thread only.
 */
@Command(name = "check-config", mixinStandardHelpOptions = true,
    description = "Validate FILE and every data file it publishes; exit 2 when refused.")
final class CheckConfig implements Callable<Integer> {
  @Mixin ConfigFile config = new ConfigFile();

  @Override
  public Integer call() throws ConfigException, IOException {
    LogSetup.apply("warn", "text"); // the verdict is the output; engine chatter is not
    ResolvedConfig cfg = check(config.path);
    LogSetup.flush(); // any warning before the verdict
    notePrincipalKeysNotChecked(cfg);
    System.out.println("configuration ok: " + config.path);
    return Main.OK;
  }

  /** Refuses {@code file} with a {@link ConfigException} naming the field, file and column. */
  static ResolvedConfig check(Path file) throws ConfigException, IOException {
    OpsSettings.read(file);
    ResolvedConfig cfg = Main.load(file, null);
    DataFiles.requireReadable(cfg);
    Listeners.checkTls(cfg);
    try {
      PublicationCheck.check(Bindings.publications(cfg), Bindings.engineOptions(cfg).duck());
    } catch (IllegalArgumentException e) {
      throw new ConfigException(e.getMessage(), e);
    } catch (SQLException e) {
      throw new ConfigException("a data file could not be read: " + e.getMessage(), e);
    }
    // As the user running the check: the directories a start creates, locks, restricts and
    // lists, and every key or credential that exists readable (until 2026-12-07 an unreadable
    // one counted as not there yet, and a state directory left to another user passed).
    StateAccess.check(cfg);
    Bindings.checkExistingSecrets(cfg, new StateDirectory(cfg.stateDir(), new SecureRandom()));
    return cfg;
  }

  /**
   * Says which missing principal keys {@code run} may refuse: it generates one only for a
   * principal the journal's rights do not name, and this check does not read the journal (it
   * writes nothing, and a read of the SQLite journal would create its shared-memory files as the
   * user running the check). Silent when there is no journal yet to name one.
   */
  private static void notePrincipalKeysNotChecked(ResolvedConfig cfg) {
    StateDirectory state = new StateDirectory(cfg.stateDir(), new SecureRandom());
    boolean journal = cfg.journal().shared()
        || Files.exists(state.engineDir().resolve("journal.sqlite"));
    if (!journal) {
      return;
    }
    for (int i = 0; i < cfg.callers().size(); i++) {
      ResolvedConfig.Caller c = cfg.callers().get(i);
      if (!Files.exists(c.principalKeyFile())) {
        System.out.println("note: callers[" + i + "].principal_key_file " + c.principalKeyFile()
            + " is missing: run generates it only if the journal's rights do not name principal "
            + Long.toUnsignedString(c.principal()) + ", and refuses otherwise (not checked here:"
            + " check-config does not read the journal)");
      }
    }
  }
}
