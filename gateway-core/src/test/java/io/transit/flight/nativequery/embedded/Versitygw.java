package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

/**
 * A real versitygw (S3 API over a POSIX directory) on 127.0.0.1 for tests: generated credentials
 * kept in 0600 files and passed through its environment (never on its command line), a private
 * root directory, a fixed port across {@link #restart}s. The binary is the one
 * {@code scripts/setup.d/30-versitygw.sh} caches ({@code TRANSIT_VERSITYGW} overrides the path).
 * Used from one test thread.
 */
final class Versitygw implements AutoCloseable {
  static final String VERSION = "v1.8.0";
  static final Duration START_WAIT = Duration.ofSeconds(20);

  final Path root;
  final int port;
  final String accessKey;
  final String secretKey;
  final Path accessKeyFile;
  final Path secretKeyFile;
  private final Path binary;
  private final Path log;
  private Process process;

  private Versitygw(Path dir) throws IOException {
    this.binary = binary();
    this.root = Files.createDirectories(dir.resolve("root"));
    this.log = dir.resolve("versitygw.log");
    SecureRandom random = new SecureRandom();
    this.accessKey = "tf" + HexFormat.of().formatHex(bytes(random, 8));
    this.secretKey = HexFormat.of().formatHex(bytes(random, 20));
    this.accessKeyFile = secret(dir.resolve("s3-access-key"), accessKey);
    this.secretKeyFile = secret(dir.resolve("s3-secret-key"), secretKey);
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      this.port = s.getLocalPort();
    }
  }

  /** Starts one under {@code dir} (its root and key files go there). */
  static Versitygw start(Path dir) throws IOException, InterruptedException {
    Versitygw g = new Versitygw(dir);
    g.startProcess();
    return g;
  }

  /** The cached binary; a clear failure (not a skip) when setup has not run. */
  static Path binary() {
    String env = System.getenv("TRANSIT_VERSITYGW");
    Path p;
    if (env != null && !env.isEmpty()) {
      p = Path.of(env);
    } else {
      String cache = System.getenv("XDG_CACHE_HOME");
      Path base = cache != null && !cache.isEmpty() ? Path.of(cache)
          : Path.of(System.getProperty("user.home"), ".cache");
      p = base.resolve("transit-flight/versitygw-" + VERSION + "/versitygw");
    }
    if (!Files.isExecutable(p)) {
      throw new IllegalStateException("versitygw " + VERSION + " is not at " + p
          + "; run scripts/setup.d/30-versitygw.sh (or set TRANSIT_VERSITYGW)");
    }
    return p;
  }

  URI endpoint() {
    return URI.create("http://127.0.0.1:" + port);
  }

  /** Store settings for {@code bucket} with short timeouts, so failures in tests come fast. */
  SegmentSettings.ObjectStore settings(String bucket, String prefix) {
    return new SegmentSettings.ObjectStore(endpoint(), "us-east-1", bucket, prefix, accessKey,
        secretKey, Duration.ofSeconds(1), Duration.ofSeconds(5), 8, Duration.ZERO);
  }

  /** Makes {@code bucket}: in the POSIX backend a bucket is a top-level directory. */
  void createBucket(String bucket) throws IOException {
    Files.createDirectories(root.resolve(bucket));
  }

  void stop() throws InterruptedException {
    if (process == null) {
      return;
    }
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
    process = null;
  }

  /** Stops it and starts it again on the same port, root and credentials. */
  void restart() throws IOException, InterruptedException {
    stop();
    startProcess();
  }

  @Override
  public void close() throws InterruptedException {
    stop();
  }

  private void startProcess() throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(binary.toString(), "--quiet", "--keep-alive",
        "--port", "127.0.0.1:" + port, "posix", root.toString());
    pb.environment().put("ROOT_ACCESS_KEY_ID", accessKey);
    pb.environment().put("ROOT_SECRET_ACCESS_KEY", secretKey);
    pb.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    process = pb.start();
    long deadline = System.nanoTime() + START_WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("versitygw exited with " + process.exitValue() + "; see " + log);
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        Thread.sleep(50);
      }
    }
    stop();
    throw new IOException("versitygw did not listen on " + port + " within " + START_WAIT);
  }

  private static Path secret(Path file, String value) throws IOException {
    Files.deleteIfExists(file);
    Files.createFile(file, PosixFilePermissions.asFileAttribute(
        PosixFilePermissions.fromString("rw-------")));
    Files.writeString(file, value + "\n");
    return file;
  }

  private static byte[] bytes(SecureRandom random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }
}
