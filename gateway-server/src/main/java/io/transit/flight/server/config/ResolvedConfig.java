package io.transit.flight.server.config;

import io.transit.flight.nativequery.embedded.SegmentSettings;
import io.transit.flight.proto.TableDeclaration;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A validated configuration: every default applied, every path resolved against the state
 * directory, every publication turned into its {@link TableDeclaration}. Immutable; a SIGHUP
 * reload builds a new one and swaps it in whole. {@code segments} (where retained segments are
 * kept, with an object store's keys already read from their files) is used once, at start.
 */
public record ResolvedConfig(
    String host,
    int port,
    Path stateDir,
    long realm,
    String realmName,
    long service,
    long ingress,
    long ticketTtlMs,
    Limits limits,
    Engine engine,
    Journal journal,
    Map<String, Publication> publications,
    List<Caller> callers,
    Transport transport,
    SegmentSettings segments) {

  /**
   * The listeners beyond {@code host:port}: whether TCP is served at all, an optional Unix domain
   * socket (null when absent) and the gateway's own TLS files (both null when the edge
   * terminates TLS). {@code privateNetwork} only permits plaintext beyond loopback at start; it
   * is kept so that a reload changing it is refused like any other {@code listen} change.
   */
  public record Transport(boolean tcp, Path unixSocket, Path tlsCertFile, Path tlsKeyFile,
      boolean privateNetwork) {
    public boolean tls() {
      return tlsCertFile != null;
    }
  }

  /** This configuration listening on {@code newPort} instead (a command-line override). */
  public ResolvedConfig withPort(int newPort) {
    return new ResolvedConfig(host, newPort, stateDir, realm, realmName, service, ingress,
        ticketTtlMs, limits, engine, journal, publications, callers, transport, segments);
  }

  /**
   * The embedded engine's resources and the JVM heap, every default applied: DuckDB's memory
   * limit, threads and spill directory, the engine's Arrow allocator, and the heap the launcher
   * gives the JVM ({@code -Xmx}), and how long retained results are kept. All are sized at start.
   */
  public record Engine(long memoryLimitBytes, int threads, Path tempDir, long allocatorBytes,
      long heapBytes, io.transit.flight.nativequery.embedded.RetentionPolicy retention,
      io.transit.flight.nativequery.embedded.LeasePolicy lease) {}

  /**
   * The engine's journal: {@code postgres} is null for the embedded SQLite journal (the default),
   * else the shared PostgreSQL journal's settings, its password already read from its file.
   */
  public record Journal(io.transit.flight.nativequery.postgres.PostgresSettings postgres) {
    public static final Journal SQLITE = new Journal(null);

    public boolean shared() {
      return postgres != null;
    }
  }

  /** A published Table and its data files. */
  public record Publication(
      String name, TableDeclaration declaration, String format, List<Path> files) {}

  /** A caller mapping with resolved file paths. */
  public record Caller(
      String name,
      Path credentialFile,
      long principal,
      Path principalKeyFile,
      boolean hasRole,
      long role,
      long credentialEpoch,
      long bindingRevision,
      long requests,
      String publication,
      boolean canSend,
      boolean canInspect,
      boolean canRead) {}
}
