package io.transit.flight.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's heap look-up (the same file the daemon will read, or the default), the
 * daemon's temporary directory under its state directory and its JIT thresholds.
 */
class JvmOptionsTest {
  /**
   * What every daemon command with a heap of {@code heapBytes} gets after its heap and temporary
   * directory: JIT and collector.
   */
  private static String daemon(long heapBytes) {
    String extra = System.getenv("TRANSIT_JAVA_OPTS");
    String gc = JvmOptions.collector(heapBytes, extra);
    String pages = JvmOptions.hugePages(JvmOptions.TRANSPARENT_HUGE_PAGES, extra);
    return " " + JvmOptions.JIT_THRESHOLDS + (gc.isEmpty() ? "" : " " + gc)
        + (pages.isEmpty() ? "" : " " + pages);
  }

  @TempDir Path dir;

  /** The options printed, one a line as the launchers read them, joined by spaces to compare. */
  private static String run(String... args) {
    return String.join(" ", lines(args));
  }

  private static List<String> lines(String... args) {
    PrintStream saved = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      JvmOptions.main(args);
    } finally {
      System.setOut(saved);
    }
    return out.toString(StandardCharsets.UTF_8).strip().lines().toList();
  }

  @Test
  void aPathWithSpacesStaysOneOption() throws Exception {
    Path demoState = Files.createDirectory(dir.resolve("demo state"));
    List<String> options = lines("demo", "--state-dir", demoState.toString());
    assertEquals("-Xmx1073741824", options.get(0));
    assertEquals("-Djava.io.tmpdir=" + demoState.resolve("tmp"), options.get(1),
        "the launchers pass each line as one argument");
    assertTrue(options.stream().noneMatch(String::isBlank), options.toString());
  }

  @Test
  void heapComesFromTheConfigurationTheDaemonWillRead() throws Exception {
    Path demoState = Files.createDirectory(dir.resolve("demo"));
    assertEquals("-Xmx1073741824 -Djava.io.tmpdir=" + demoState.resolve("tmp") + daemon(1L << 30),
        run("demo", "--state-dir", demoState.toString()),
        "a demo's first run has no file yet: the default heap");
    assertEquals("rwx------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(demoState.resolve("tmp"))), "created private");
    Path config = dir.resolve("gateway.json");
    Files.writeString(config, """
        {
          "state_dir": "state",
          // comments are allowed, as for the daemon
          "deployment": {"realm": 1, "realm_name": "t", "service": 7, "ingress": 1},
          "jvm": {"heap_bytes": 268435456},
          "publications": [{"name": "p", "catalog": "c", "schema": "s", "table": "t",
            "owner": "o", "object_id": 5, "source": 9, "metadata_ref": "m",
            "format": "parquet", "files": ["x.parquet"],
            "columns": [{"name": "a", "type": "INT64", "nullable": false}]}],
          "callers": [{"name": "a", "credential_file": "credentials/a", "principal": 10,
            "principal_key_file": "keys/a.key", "requests": 1, "publication": "p"}]
        }""");
    String tmp = " -Djava.io.tmpdir=" + dir.resolve("state").resolve("tmp") + daemon(256L << 20);
    assertEquals("-Xmx268435456" + tmp, run("run", "--config", config.toString()));
    assertEquals("-Xmx268435456" + tmp, run("run", "--config=" + config, "--log-format", "json"),
        "picocli's --config=FILE form, among the daemon's other options");
    assertEquals("-Xmx1073741824", run("--help"), "no file: the default");
    Files.copy(config, demoState.resolve(DemoSetup.CONFIG));
    String demoTmp = " -Djava.io.tmpdir=" + demoState.resolve("state").resolve("tmp")
        + daemon(256L << 20);
    assertEquals("-Xmx268435456" + demoTmp,
        run("demo", "--state-dir", demoState.toString(), "--port", "0"));
    assertEquals("-Xmx268435456" + demoTmp, run("demo", "--state-dir=" + demoState, "--port=0"));
    assertEquals("-Xmx268435456", run("check-config", "--config", config.toString()),
        "not a daemon: no temporary directory of its own, no JIT thresholds, no collector");
    Files.writeString(config, "{ not json");
    assertEquals("-Xmx1073741824" + daemon(1L << 30), run("run", "--config", config.toString()),
        "a file that does not load: the default (and the JVM's own temporary directory); the"
            + " daemon reports the error itself");
  }

  @Test
  void theDriversLoadTheirNativeLibrariesWhereTheBuildPutThem() throws Exception {
    Path nativeDir = Files.createDirectory(dir.resolve("native"));
    assertEquals("", JvmOptions.nativeLibraries(nativeDir, "/usr/lib"),
        "no libraries there (a build on another platform): the drivers unpack their own");
    Files.writeString(nativeDir.resolve(JvmOptions.SQLITE_LIBRARY), "");
    assertEquals("-Dorg.sqlite.lib.path=" + nativeDir + "\n-Dorg.sqlite.lib.name=libsqlitejdbc.so",
        JvmOptions.nativeLibraries(nativeDir, "/usr/lib"));
    Files.writeString(nativeDir.resolve(JvmOptions.DUCKDB_LIBRARY), "");
    assertEquals("-Djava.library.path=" + nativeDir + ":/usr/lib"
            + "\n-Dorg.sqlite.lib.path=" + nativeDir + "\n-Dorg.sqlite.lib.name=libsqlitejdbc.so",
        JvmOptions.nativeLibraries(nativeDir, "/usr/lib"),
        "ahead of the JVM's default path, which stays searched");
    assertEquals("-Djava.library.path=" + nativeDir
            + "\n-Dorg.sqlite.lib.path=" + nativeDir + "\n-Dorg.sqlite.lib.name=libsqlitejdbc.so",
        JvmOptions.nativeLibraries(nativeDir, ""));
    Path found = JvmOptions.nativeDir().orElseThrow();
    assertEquals("native", found.getFileName().toString());
    try (Stream<Path> beside = Files.list(found.getParent())) {
      assertTrue(beside.anyMatch(p -> p.getFileName().toString().startsWith("duckdb_jdbc-")),
          "beside the driver's jar: " + found);
    }
  }

  @Test
  void theSerialCollectorWithAQuarterOfTheHeapAsYoungGenerationUnlessTheOperatorNamesOne() {
    long gib = 1L << 30;
    assertEquals("-XX:+UseSerialGC -Xmn268435456", JvmOptions.collector(gib, null),
        "the default heap: a quarter");
    assertEquals("-XX:+UseSerialGC -Xmn268435456", JvmOptions.collector(8 * gib, "-Xss1m"),
        "at most 256 MiB");
    assertEquals("-XX:+UseSerialGC -Xmn67108864", JvmOptions.collector(256L << 20, null));
    assertEquals("-XX:+UseSerialGC -Xmn33554432", JvmOptions.collector(128L << 20, null),
        "the smallest heap the configuration accepts: 32 MiB");
    assertEquals(JvmOptions.MIN_YOUNG_BYTES, JvmOptions.youngBytes(64L << 20), "never less");
    assertEquals("", JvmOptions.collector(gib, "-Xss1m -XX:+UseG1GC"),
        "the JVM refuses two collectors: the operator's choice stands alone");
    assertEquals("", JvmOptions.collector(gib, "-XX:+UseZGC -Xlog:gc"));
    assertEquals("-XX:+UseSerialGC -Xmn268435456",
        JvmOptions.collector(gib, "-XX:+UseStringDeduplication -XX:GCTimeRatio=9"),
        "options that only mention GC name no collector");
  }

  @Test
  void hugePagesWhereTheKernelOffersThemToProcessesThatAsk() throws Exception {
    Path enabled = dir.resolve("enabled");
    Files.writeString(enabled, "always [madvise] never\n");
    assertEquals("-XX:+UseTransparentHugePages", JvmOptions.hugePages(enabled, null));
    Files.writeString(enabled, "[always] madvise never\n");
    assertEquals("-XX:+UseTransparentHugePages", JvmOptions.hugePages(enabled, "-Xss1m"));
    assertEquals("", JvmOptions.hugePages(enabled, "-XX:-UseTransparentHugePages"),
        "the operator decides");
    Files.writeString(enabled, "always madvise [never]\n");
    assertEquals("", JvmOptions.hugePages(enabled, null), "the JVM would only warn");
    assertEquals("", JvmOptions.hugePages(dir.resolve("absent"), null), "no such kernel file");
  }
}
