package io.transit.flight.server.cli;

import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Prints the JVM options the daemon's configuration asks for ({@code -Xmx} from
 * {@code jvm.heap_bytes}), one a line since a path in one may hold spaces (the launchers read
 * each line as one argument), for the launcher to pass before the daemon's JVM starts: the heap is
 * fixed at JVM start, so the daemon cannot size it itself. Takes the daemon's own arguments and
 * finds the file the same way: {@code --config FILE} (or {@code --config=FILE}), or the demo's {@code gateway.json} in its
 * state directory. Prints the default heap when there is no file yet (a demo's first run) or the
 * file does not load — the daemon then reports why itself.
 *
 * <p>When the launcher names a directory for it ({@code -Dtransit.cds.dir=DIR}) and the command
 * starts a daemon ({@code run}, {@code demo}), also the class-data-sharing options of {@link
 * CdsArchive}: map the archive, or dump it when this daemon exits — never a daemon whose {@code
 * TRANSIT_JAVA_OPTS} load a native agent ({@code scripts/bench --cpu-profile}), which the JVM
 * would refuse to start. {@code TRANSIT_CDS=off} in the environment leaves them out.
 *
 * <p>For a daemon command whose state directory it can name (the configuration's
 * {@code state_dir}, or the demo's directory), also {@code -Djava.io.tmpdir=STATE/tmp}, creating
 * that directory (0700): a library unpacked into the JVM's temporary directory at start (Netty's
 * transport; DuckDB's and sqlite-jdbc's where the build did not take theirs out, 55 MB for
 * DuckDB alone) is removed only at a clean exit, so a daemon killed with -9 would leave it in
 * {@code /tmp} for good. Under the state directory the daemon empties it at its next start, once
 * it holds the state lock
 * ({@link io.transit.flight.server.config.StateDirectory#emptyTemporary}).
 *
 * <p>For every command, when the build put DuckDB's and SQLite's native libraries beside their
 * jars ({@code lib/native}, gateway-server's {@code native-libraries.xml}), the properties that
 * make the drivers load them there ({@link #nativeLibraries}).
 *
 * <p>For a daemon command, also the JIT's lower compile thresholds ({@link #JIT_THRESHOLDS}) and
 * the collector with its young generation ({@link #collector}) and, where the kernel offers them,
 * transparent huge pages for the heap ({@link #hugePages}).
 *
 * <p>Runs in its own short-lived JVM on the launcher's thread; creates at most that directory.
 */
public final class JvmOptions {
  /**
   * For a daemon: HotSpot's tiered-compilation thresholds at a fifth (C2) to a half (C1) of
   * their defaults. A statement runs each method of its path about once, so with the defaults
   * the JIT reached the serving path's compiled state only after about 24,000 statements
   * (~110 s of back-to-back statements on two vCPUs; 4,000 in, a statement still cost about
   * 60 % more CPU); with these, about 12,000 (~55 s), the same steady state
   * (docs/performance.md, "Start warm"). {@code TRANSIT_JAVA_OPTS} comes later on the command
   * line and can set each back.
   */
  static final String JIT_THRESHOLDS = "-XX:Tier3InvocationThreshold=100"
      + " -XX:Tier3MinInvocationThreshold=50 -XX:Tier3CompileThreshold=1000"
      + " -XX:Tier4InvocationThreshold=1000 -XX:Tier4MinInvocationThreshold=300"
      + " -XX:Tier4CompileThreshold=3000";

  /** An option that names a collector ({@code -XX:+UseG1GC}, {@code -XX:+UseZGC}, ...). */
  private static final Pattern SELECTS_COLLECTOR = Pattern.compile("-XX:[+-]Use\\w+GC\\b");

  /** Where Linux says which processes get transparent huge pages. */
  static final Path TRANSPARENT_HUGE_PAGES = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");

  /** The smallest and the largest young generation {@link #youngBytes} gives a daemon. */
  static final long MIN_YOUNG_BYTES = 32L << 20;
  static final long MAX_YOUNG_BYTES = 256L << 20;

  private JvmOptions() {}

  /**
   * For a daemon: the serial collector with a young generation of {@link #youngBytes}. A
   * statement allocates about 3 MB, nearly all of it the Ed25519 library's short-lived field
   * elements, and almost nothing survives (the live heap stays near 16 MB, a collection copies
   * about 0.1 MB), so a young collection's pause (about 1 ms on two vCPUs) is mostly fixed
   * cost — the threads' stacks, the old generation's dirty cards, the JVM's weak handles — and
   * the young generation's size decides how often it is paid. In paired runs on two vCPUs with
   * the heap on huge pages ({@link #hugePages}) 256 MiB was 0.11–0.17 ms a statement faster than
   * 32 MiB and 512 MiB another 0.06 ms (docs/performance.md, fourteenth round); the serial
   * collector was at least as fast as the parallel one while waking no collector threads
   * (twelfth round). Nothing when the launcher's extra options ({@code TRANSIT_JAVA_OPTS}) name
   * a collector themselves: the JVM refuses two.
   */
  static String collector(long heapBytes, String javaOpts) {
    if (javaOpts != null && SELECTS_COLLECTOR.matcher(javaOpts).find()) {
      return "";
    }
    return "-XX:+UseSerialGC -Xmn" + youngBytes(heapBytes);
  }

  /**
   * A quarter of the heap, between 32 and 256 MiB: the default heap (1 GiB) gets 256 MiB, the
   * smallest (128 MiB) 32 MiB, and the old generation keeps three quarters. Beyond 256 MiB a
   * collection is already rare (about one in 50 statements at full load) while every byte of the
   * young generation is resident once it has been filled.
   */
  static long youngBytes(long heapBytes) {
    return Math.max(MIN_YOUNG_BYTES, Math.min(MAX_YOUNG_BYTES, heapBytes / 4));
  }

  /**
   * For a daemon, on a kernel that offers transparent huge pages to processes that ask ({@code
   * [madvise]}, or {@code [always]} in {@code enabled}): the JVM asks for them for its heap. The
   * young generation is streamed through at about 1 GB/s (see {@link #collector}), and with 4 KiB
   * pages every statement's allocations walk new TLB entries; a statement was 0.31 ms faster and
   * a GetTableTypes round trip 0.09 ms in paired runs (docs/performance.md, eleventh round).
   * Nothing on a kernel without them ({@code [never]}, or no such file), where the JVM would only
   * warn; nothing when the launcher's extra options already decide ({@code
   * -XX:[+-]UseTransparentHugePages}).
   */
  static String hugePages(Path enabledFile, String javaOpts) {
    if (javaOpts != null && javaOpts.contains("UseTransparentHugePages")) {
      return "";
    }
    try {
      String modes = Files.readString(enabledFile);
      return modes.contains("[madvise]") || modes.contains("[always]")
          ? "-XX:+UseTransparentHugePages" : "";
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /** The names the drivers look for in the native directory (native-libraries.xml). */
  static final String DUCKDB_LIBRARY = "libduckdb_java.so";
  static final String SQLITE_LIBRARY = "libsqlitejdbc.so";

  /**
   * The JVM options that load the drivers' native libraries from {@code dir} where it holds them:
   * {@code dir} ahead of {@code libraryPath} (the JVM's default {@code java.library.path}), where
   * DuckDB's driver, whose jar the build emptied of libraries, looks once it finds none in its
   * jar; {@code org.sqlite.lib.path} and {@code .name}, which SQLite's driver reads before it
   * would unpack its own. Otherwise each driver inflates its library into the temporary directory
   * at every start: 57 MB, about 0.5 s on two vCPUs, for DuckDB's alone. One option a line.
   */
  static String nativeLibraries(Path dir, String libraryPath) {
    StringBuilder out = new StringBuilder();
    if (Files.isRegularFile(dir.resolve(DUCKDB_LIBRARY))) {
      out.append("-Djava.library.path=").append(dir);
      if (libraryPath != null && !libraryPath.isEmpty()) {
        out.append(File.pathSeparator).append(libraryPath);
      }
    }
    if (Files.isRegularFile(dir.resolve(SQLITE_LIBRARY))) {
      out.append(out.length() > 0 ? "\n" : "").append("-Dorg.sqlite.lib.path=").append(dir)
          .append("\n-Dorg.sqlite.lib.name=").append(SQLITE_LIBRARY);
    }
    return out.toString();
  }

  /**
   * {@code native/} beside the jar that holds DuckDB's driver (gateway-server's {@code
   * target/lib}, the distribution's {@code lib}); empty when that jar cannot be found. The class
   * is looked up without initialising it, so no library is loaded here.
   */
  static Optional<Path> nativeDir() {
    try {
      Class<?> driver = Class.forName("org.duckdb.DuckDBDriver", false,
          JvmOptions.class.getClassLoader());
      CodeSource source = driver.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) {
        return Optional.empty();
      }
      Path jar = Path.of(source.getLocation().toURI());
      return Optional.ofNullable(jar.getParent()).map(d -> d.resolve("native"));
    } catch (ClassNotFoundException | URISyntaxException | RuntimeException e) {
      return Optional.empty();
    }
  }

  public static void main(String[] args) {
    String config = option(args, "--config");
    Path file = config != null ? Path.of(config)
        : args.length > 0 && args[0].equals("demo")
            ? Path.of(orElse(option(args, "--state-dir"), ".state/demo"))
                .resolve(DemoSetup.CONFIG)
            : null;
    long heap = ConfigLoader.DEFAULT_HEAP_BYTES;
    boolean daemon = args.length > 0 && (args[0].equals("run") || args[0].equals("demo"));
    Path state = args.length > 0 && args[0].equals("demo") && config == null
        ? Path.of(orElse(option(args, "--state-dir"), ".state/demo")) : null;
    if (file != null && Files.exists(file)) {
      try {
        ResolvedConfig cfg = new ConfigLoader().load(file);
        heap = cfg.engine().heapBytes();
        state = cfg.stateDir();
      } catch (ConfigException | RuntimeException e) {
        heap = ConfigLoader.DEFAULT_HEAP_BYTES;
      }
    }
    List<String> out = new ArrayList<>();
    out.add("-Xmx" + heap);
    nativeDir().map(d -> nativeLibraries(d, System.getProperty("java.library.path")))
        .ifPresent(o -> addLines(out, o));
    if (daemon && state != null) {
      try {
        Path tmp = StateDirectory.createTemporaryDir(state.toAbsolutePath());
        out.add("-Djava.io.tmpdir=" + tmp);
      } catch (IOException | UnsupportedOperationException e) {
        // The JVM's default stays; the daemon reports a state directory it cannot write itself.
      }
    }
    if (daemon) {
      String extra = System.getenv("TRANSIT_JAVA_OPTS");
      // These hold no path: split on their spaces.
      for (String o : new String[] {JIT_THRESHOLDS, collector(heap, extra),
          hugePages(TRANSPARENT_HUGE_PAGES, extra)}) {
        addLines(out, o.replace(' ', '\n'));
      }
    }
    String cdsDir = System.getProperty("transit.cds.dir");
    if (cdsDir != null && !cdsDir.isEmpty() && daemon
        && !"off".equals(System.getenv("TRANSIT_CDS"))) {
      CdsArchive.options(Path.of(cdsDir), System.getProperty("java.class.path"),
              System.getProperty("java.vm.version"), Instant.now(),
              !loadsNativeAgent(System.getenv("TRANSIT_JAVA_OPTS")))
          .ifPresent(o -> addLines(out, o));
    }
    System.out.println(String.join("\n", out));
  }

  /** Adds each non-empty line of {@code options} (one option a line) to {@code out}. */
  private static void addLines(List<String> out, String options) {
    for (String o : options.split("\n")) {
      if (!o.isEmpty()) {
        out.add(o);
      }
    }
  }

  /** Whether the launcher's extra JVM options load a JVMTI agent, which CDS dumping refuses. */
  static boolean loadsNativeAgent(String javaOpts) {
    return javaOpts != null
        && (javaOpts.contains("-agentpath:") || javaOpts.contains("-agentlib:"));
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
