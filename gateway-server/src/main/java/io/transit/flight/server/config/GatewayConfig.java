package io.transit.flight.server.config;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * The daemon's one JSON configuration file, as parsed. Field names are snake_case in JSON; every
 * limit has a safe default (see {@link Limits}). Validation (with messages that name the field)
 * lives in {@link ConfigLoader}; these records only carry values. Paths are relative to the
 * state directory unless absolute.
 */
// "ops" (metrics, logs, drain) is read by server.ops.OpsSettings, with the same strictness.
@JsonIgnoreProperties(value = {"ops"}, ignoreUnknown = false)
public record GatewayConfig(
    @JsonProperty("listen") Listen listen,
    @JsonProperty("state_dir") String stateDir,
    @JsonProperty("deployment") Deployment deployment,
    @JsonProperty("limits") Limits limits,
    @JsonProperty("engine") Engine engine,
    @JsonProperty("journal") Journal journal,
    @JsonProperty("segments") Segments segments,
    @JsonProperty("jvm") Jvm jvm,
    @JsonProperty("publications") List<PublicationConfig> publications,
    @JsonProperty("callers") List<CallerConfig> callers) {

  /**
   * Where the private HTTP/2 listener binds (loopback by default: it sits behind a TLS edge), an
   * optional Unix domain socket for an edge on the same host, and optional TLS for deployments
   * without an edge.
   */
  public record Listen(
      @JsonProperty("host") String host,
      @JsonProperty("port") Integer port,
      @JsonProperty("tcp") Boolean tcp,
      @JsonProperty("unix_socket") String unixSocket,
      @JsonProperty("tls") Tls tls,
      @JsonProperty("private_network") Boolean privateNetwork) {}

  /** PEM certificate chain and PKCS#8 PEM private key for the gateway's own TLS. */
  public record Tls(
      @JsonProperty("cert_file") String certFile,
      @JsonProperty("key_file") String keyFile) {}

  /** This deployment's identity: the u64 scope values tickets and proofs carry. */
  public record Deployment(
      @JsonProperty("realm") Long realm,
      @JsonProperty("realm_name") String realmName,
      @JsonProperty("service") Long service,
      @JsonProperty("ingress") Long ingress,
      @JsonProperty("ticket_ttl_ms") Long ticketTtlMs) {}

  /**
   * The embedded engine's own resources: DuckDB's memory limit, threads and spill directory, and
   * the Arrow allocator its queries write results through, and the retained results' maximum age
   * and total bytes (with the sweep interval), the execution lease with its takeover scan
   * interval, and how long finished statements' history is kept (absent: for good). Absent fields
   * take defaults sized for the machine (docs/limits.md).
   */
  public record Engine(
      @JsonProperty("memory_limit_bytes") Long memoryLimitBytes,
      @JsonProperty("threads") Integer threads,
      @JsonProperty("temp_dir") String tempDir,
      @JsonProperty("allocator_bytes") Long allocatorBytes,
      @JsonProperty("retention_max_age_ms") Long retentionMaxAgeMs,
      @JsonProperty("retention_max_bytes") Long retentionMaxBytes,
      @JsonProperty("retention_check_ms") Long retentionCheckMs,
      @JsonProperty("lease_ms") Long leaseMs,
      @JsonProperty("lease_scan_ms") Long leaseScanMs,
      @JsonProperty("history_max_age_ms") Long historyMaxAgeMs) {}

  /**
   * Where the engine's journal lives: {@code sqlite} (the default: a file in the state directory)
   * or {@code postgresql} (a database shared by the replicas of a deployment), given by {@code
   * url} or by {@code host}, {@code port} and {@code database}; the password is in its own 0600
   * file.
   */
  public record Journal(
      @JsonProperty("kind") String kind,
      @JsonProperty("url") String url,
      @JsonProperty("host") String host,
      @JsonProperty("port") Integer port,
      @JsonProperty("database") String database,
      @JsonProperty("user") String user,
      @JsonProperty("password_file") String passwordFile,
      @JsonProperty("pool_size") Integer poolSize,
      @JsonProperty("connection_timeout_ms") Long connectionTimeoutMs,
      @JsonProperty("lock_timeout_ms") Long lockTimeoutMs,
      @JsonProperty("statement_timeout_ms") Long statementTimeoutMs,
      @JsonProperty("idle_in_transaction_timeout_ms") Long idleInTransactionTimeoutMs) {}

  /**
   * Where retained segments are kept: {@code local} (the state directory, the default) or {@code
   * s3} (an S3-API bucket; every other field is for that kind). Key files are paths relative to
   * the state directory, read once at start.
   */
  public record Segments(
      @JsonProperty("kind") String kind,
      @JsonProperty("endpoint") String endpoint,
      @JsonProperty("private_network") Boolean privateNetwork,
      @JsonProperty("region") String region,
      @JsonProperty("bucket") String bucket,
      @JsonProperty("prefix") String prefix,
      @JsonProperty("access_key_file") String accessKeyFile,
      @JsonProperty("secret_key_file") String secretKeyFile,
      @JsonProperty("connect_timeout_ms") Long connectTimeoutMs,
      @JsonProperty("request_timeout_ms") Long requestTimeoutMs,
      @JsonProperty("max_connections") Integer maxConnections,
      @JsonProperty("sweep_min_age_ms") Long sweepMinAgeMs) {}

  /** The JVM's own sizing, applied by the launcher before the daemon starts. */
  public record Jvm(@JsonProperty("heap_bytes") Long heapBytes) {}

  /** One published Table: where its data is and its declared logical row descriptor. */
  public record PublicationConfig(
      @JsonProperty("name") String name,
      @JsonProperty("catalog") String catalog,
      @JsonProperty("schema") String schema,
      @JsonProperty("table") String table,
      @JsonProperty("owner") String owner,
      @JsonProperty("object_id") Long objectId,
      @JsonProperty("source") Long source,
      @JsonProperty("metadata_ref") String metadataRef,
      @JsonProperty("format") String format,
      @JsonProperty("files") List<String> files,
      @JsonProperty("columns") List<ColumnConfig> columns) {}

  public record ColumnConfig(
      @JsonProperty("name") String name,
      @JsonProperty("type") String type,
      @JsonProperty("nullable") Boolean nullable) {}

  /**
   * One caller mapping: an opaque Bearer credential (kept in its own 0600 file) mapped to a
   * dedicated native principal and key, an optional selected role, and exactly one published
   * Table.
   */
  public record CallerConfig(
      @JsonProperty("name") String name,
      @JsonProperty("credential_file") String credentialFile,
      @JsonProperty("principal") Long principal,
      @JsonProperty("principal_key_file") String principalKeyFile,
      @JsonProperty("role") Long role,
      @JsonProperty("credential_epoch") Long credentialEpoch,
      @JsonProperty("binding_revision") Long bindingRevision,
      @JsonProperty("requests") Long requests,
      @JsonProperty("publication") String publication,
      @JsonProperty("rights") Rights rights) {}

  /** The principal's native rights: send (admission), inspect (manifests), read (entries). */
  public record Rights(
      @JsonProperty("send") Boolean send,
      @JsonProperty("inspect") Boolean inspect,
      @JsonProperty("read") Boolean read) {}
}
