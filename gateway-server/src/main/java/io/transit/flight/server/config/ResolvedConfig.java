package io.transit.flight.server.config;

import io.transit.flight.proto.TableDeclaration;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A validated configuration: every default applied, every path resolved against the state
 * directory, every publication turned into its {@link TableDeclaration}. Immutable; a SIGHUP
 * reload builds a new one and swaps it in whole.
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
    Map<String, Publication> publications,
    List<Caller> callers) {

  /** This configuration listening on {@code newPort} instead (a command-line override). */
  public ResolvedConfig withPort(int newPort) {
    return new ResolvedConfig(host, newPort, stateDir, realm, realmName, service, ingress,
        ticketTtlMs, limits, publications, callers);
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
