package io.transit.flight.server.cli;

import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

/**
 * Prints the JVM options the daemon's configuration asks for ({@code -Xmx} from
 * {@code jvm.heap_bytes}), for the launcher to pass before the daemon's JVM starts: the heap is
 * fixed at JVM start, so the daemon cannot size it itself. Takes the daemon's own arguments and
 * finds the file the same way: {@code --config FILE} (or {@code --config=FILE}), or the demo's {@code gateway.json} in its
 * state directory. Prints the default heap when there is no file yet (a demo's first run) or the
 * file does not load — the daemon then reports why itself.
 *
 * <p>When the launcher names a directory for it ({@code -Dtransit.cds.dir=DIR}) and the command
 * starts a daemon ({@code run}, {@code demo}), also the class-data-sharing options of {@link
 * CdsArchive}: map the archive, or dump it when this daemon exits. {@code TRANSIT_CDS=off} in
 * the environment leaves them out.
 *
 * <p>Runs in its own short-lived JVM on the launcher's thread; touches no state.
 */
public final class JvmOptions {
  private JvmOptions() {}

  public static void main(String[] args) {
    String config = option(args, "--config");
    Path file = config != null ? Path.of(config)
        : args.length > 0 && args[0].equals("demo")
            ? Path.of(orElse(option(args, "--state-dir"), ".state/demo"))
                .resolve(DemoSetup.CONFIG)
            : null;
    long heap = ConfigLoader.DEFAULT_HEAP_BYTES;
    if (file != null && Files.exists(file)) {
      try {
        heap = new ConfigLoader().load(file).engine().heapBytes();
      } catch (ConfigException | RuntimeException e) {
        heap = ConfigLoader.DEFAULT_HEAP_BYTES;
      }
    }
    StringBuilder out = new StringBuilder("-Xmx").append(heap);
    String cdsDir = System.getProperty("transit.cds.dir");
    boolean daemon = args.length > 0 && (args[0].equals("run") || args[0].equals("demo"));
    if (cdsDir != null && !cdsDir.isEmpty() && daemon
        && !"off".equals(System.getenv("TRANSIT_CDS"))) {
      CdsArchive.options(Path.of(cdsDir), System.getProperty("java.class.path"),
              System.getProperty("java.vm.version"), Instant.now())
          .ifPresent(o -> out.append(' ').append(o));
    }
    System.out.println(out);
  }

  /** {@code NAME VALUE} or {@code NAME=VALUE}, as the daemon's command line accepts both. */
  private static String option(String[] args, String name) {
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals(name) && i + 1 < args.length) {
        return args[i + 1];
      }
      if (args[i].startsWith(name + "=")) {
        return args[i].substring(name.length() + 1);
      }
    }
    return null;
  }

  private static String orElse(String v, String fallback) {
    return v != null ? v : fallback;
  }
}
