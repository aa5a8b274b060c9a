package io.transit.flight.server.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The {@code --config FILE} option of the commands that read a deployment's configuration. */
final class ConfigFile {
  @Option(names = "--config", required = true, paramLabel = "FILE",
      description = "the configuration file (docs/configuration.md)")
  Path path;
}
