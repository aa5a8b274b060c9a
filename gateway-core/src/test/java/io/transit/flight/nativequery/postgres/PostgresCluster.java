package io.transit.flight.nativequery.postgres;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A private PostgreSQL 15 cluster for one test class: {@code initdb} into a fresh 0700
 * directory, {@code pg_ctl start} on 127.0.0.1 and a free port with its Unix socket inside that
 * directory, SCRAM password authentication with a generated password kept in a 0600 file there.
 * PostgreSQL refuses to run as root, so as root the binaries run as the {@code transit-pg} user
 * (scripts/setup.d/30-postgresql.sh creates it). {@link #close} stops the server (immediate
 * shutdown) and removes the directory.
 *
 * <p>A test class holds one through {@link PerClass}. Started and stopped on the test's own
 * thread; its methods may be called from any thread.
 */
public final class PostgresCluster implements AutoCloseable {
  public static final Path BIN = Path.of(
      System.getenv().getOrDefault("TRANSIT_PG_BIN", "/usr/lib/postgresql/15/bin"));
  static final String OS_USER = "transit-pg";
  static final String ROLE = "transit";
  private static final AtomicInteger DATABASES = new AtomicInteger();

  private final Path dir;
  private final int port;
  private final String password;

  private PostgresCluster(Path dir, int port, String password) {
    this.dir = dir;
    this.port = port;
    this.password = password;
  }

  /**
   * One cluster for a test class: {@code @RegisterExtension static final PostgresCluster.PerClass
   * CLUSTER = new PostgresCluster.PerClass();} starts it before the class's {@code @BeforeAll}
   * methods (or skips the class, as {@link #startOrSkip}) and stops it after its last test;
   * {@link #get} is the running cluster.
   */
  public static final class PerClass implements BeforeAllCallback, AfterAllCallback {
    private PostgresCluster cluster;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
      cluster = startOrSkip();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
      if (cluster != null) {
        cluster.close();
        cluster = null;
      }
    }

    public PostgresCluster get() {
      return cluster;
    }
  }

  /**
   * Starts a cluster, or aborts the calling test (JUnit: skipped) — loudly, on stderr — when the
   * PostgreSQL 15 binaries are not installed. Any other failure fails the test.
   */
  public static PostgresCluster startOrSkip() throws IOException, InterruptedException {
    if (!Files.isExecutable(BIN.resolve("initdb")) || !Files.isExecutable(BIN.resolve("pg_ctl"))) {
      String why = "PostgreSQL 15 binaries missing at " + BIN
          + ": the PostgreSQL journal tests are SKIPPED (run scripts/setup.d/30-postgresql.sh)";
      System.err.println("\n*** " + why + " ***\n");
      Assumptions.abort(why);
    }
    boolean root = "root".equals(System.getProperty("user.name"));
    Path dir = Files.createTempDirectory("transit-pg-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    byte[] raw = new byte[24];
    new SecureRandom().nextBytes(raw);
    String password = HexFormat.of().formatHex(raw);
    Path pw = dir.resolve("password");
    Files.writeString(pw, password, StandardCharsets.US_ASCII);
    Files.setPosixFilePermissions(pw, PosixFilePermissions.fromString("rw-------"));
    if (root) {
      run(List.of("chown", "-R", OS_USER + ":", dir.toString()), false);
    }
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    PostgresCluster cluster = new PostgresCluster(dir, port, password);
    try {
      run(List.of(BIN.resolve("initdb").toString(), "-D", dir.resolve("data").toString(),
          "-U", ROLE, "--pwfile=" + pw, "-A", "scram-sha-256", "-E", "UTF8", "--locale=C",
          "--no-sync"), root);
      run(List.of(BIN.resolve("pg_ctl").toString(), "-D", dir.resolve("data").toString(),
          "-l", dir.resolve("server.log").toString(), "-w", "-t", "60", "-o",
          "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c max_connections=60",
          "start"), root);
    } catch (IOException | RuntimeException e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  /** A fresh, empty database on this cluster; its name. */
  public String createDatabase() throws SQLException {
    String name = "journal_" + DATABASES.incrementAndGet();
    try (Connection c = DriverManager.getConnection(url("postgres"), ROLE, password);
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    }
    return name;
  }

  public String url(String database) {
    return PostgresSettings.url("127.0.0.1", port, database);
  }

  public int port() {
    return port;
  }

  public String password() {
    return password;
  }

  /** Settings for {@code database} with short timeouts, as a test wants them. */
  public PostgresSettings settings(String database) {
    return new PostgresSettings(url(database), ROLE, password, 6, Duration.ofSeconds(5),
        Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofSeconds(60));
  }

  /** Runs SQL on {@code database} as the cluster's superuser role (test setup and checks). */
  public void execute(String database, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(url(database), ROLE, password);
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  public Connection connect(String database) throws SQLException {
    return DriverManager.getConnection(url(database), ROLE, password);
  }

  private static void run(List<String> command, boolean asPostgresUser)
      throws IOException, InterruptedException {
    List<String> full = new ArrayList<>();
    if (asPostgresUser) {
      full.addAll(List.of("runuser", "-u", OS_USER, "--"));
    }
    full.addAll(command);
    // Output to a file, not a pipe: the server pg_ctl starts must not hold our pipe open.
    Path log = Files.createTempFile("transit-pg-cmd-", ".log");
    try {
      Process p = new ProcessBuilder(full).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(command.get(0) + " did not finish within 90 s");
      }
      if (p.exitValue() != 0) {
        throw new IOException(String.join(" ", full) + " failed (" + p.exitValue() + "): "
            + Files.readString(log, StandardCharsets.UTF_8));
      }
    } finally {
      Files.deleteIfExists(log);
    }
  }

  /** Stops the server at once (no checkpoint: the data is thrown away) and removes its files. */
  @Override
  public void close() throws IOException, InterruptedException {
    boolean root = "root".equals(System.getProperty("user.name"));
    try {
      if (Files.exists(dir.resolve("data").resolve("postmaster.pid"))) {
        run(List.of(BIN.resolve("pg_ctl").toString(), "-D", dir.resolve("data").toString(),
            "-m", "immediate", "-w", "-t", "60", "stop"), root);
      }
    } finally {
      try (Stream<Path> all = Files.walk(dir)) {
        for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
