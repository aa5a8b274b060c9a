package io.transit.flight.server.cli;

import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import java.nio.file.Files;
import java.nio.file.Path;

/** Refuses a configuration whose data files are missing or unreadable; the main thread only. */
final class DataFiles {
  private DataFiles() {}

  static void requireReadable(ResolvedConfig cfg) throws ConfigException {
    for (ResolvedConfig.Publication p : cfg.publications().values()) {
      for (Path f : p.files()) {
        if (!Files.isRegularFile(f) || !Files.isReadable(f)) {
          throw new ConfigException("publication " + p.name() + ": data file " + f
              + (Files.exists(f) ? " is not a readable file" : " does not exist"));
        }
      }
    }
  }
}
