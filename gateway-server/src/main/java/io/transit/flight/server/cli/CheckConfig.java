package io.transit.flight.server.cli;

import io.transit.flight.nativequery.embedded.PublicationCheck;
import io.transit.flight.server.Bindings;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.server.ops.LogSetup;
import io.transit.flight.server.ops.OpsSettings;
import io.transit.flight.server.transport.Listeners;
import java.io.IOException;
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
 * check ({@link PublicationCheck}: declared columns against the file's schema), and the keys and
 * credentials that exist ({@link Bindings#checkExistingSecrets}). Main thread only.
 */
@Command(name = "check-config", mixinStandardHelpOptions = true,
    description = "Validate FILE and every data file it publishes; exit 2 when refused.")
final class CheckConfig implements Callable<Integer> {
  @Mixin ConfigFile config = new ConfigFile();

  @Override
  public Integer call() throws ConfigException, IOException {
    LogSetup.apply("warn", "text"); // the verdict is the output; engine chatter is not
    check(config.path);
    LogSetup.flush(); // any warning before the verdict
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
    Bindings.checkExistingSecrets(cfg, new StateDirectory(cfg.stateDir(), new SecureRandom()));
    return cfg;
  }
}
