package io.transit.flight.server.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import io.transit.flight.nativequery.embedded.DuckSettings;
import io.transit.flight.nativequery.embedded.LeasePolicy;
import io.transit.flight.nativequery.embedded.RetentionPolicy;
import io.transit.flight.nativequery.embedded.SegmentSettings;
import io.transit.flight.nativequery.postgres.PostgresSettings;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.LogicalType;
import io.transit.flight.ticket.TransitDefinition;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads and validates the JSON configuration. Every rejection names the offending field by its
 * JSON path (for example {@code callers[1].principal}) and says what was expected, so an operator
 * can fix the file without reading code.
 */
public final class ConfigLoader {
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]{0,127}");
  private static final Set<String> FORMATS = Set.of("parquet", "csv", "arrow");
  /** The most DuckDB threads a file may ask for; the default (the cores) is capped at it too. */
  private static final int MAX_ENGINE_THREADS = 256;

  private static final ObjectMapper MAPPER = strict();

  /**
   * Each value must have its field's JSON type: no number read from a string or a boolean, no
   * fraction cut to an integer, no text made of a number ({@code "max_connections": 1.9} is not
   * 1, {@code "read": 0} not false).
   */
  private static ObjectMapper strict() {
    ObjectMapper m = JsonMapper.builder()
        .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
        .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
        .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
        // The annotated example in config/ carries // comments.
        .enable(com.fasterxml.jackson.core.JsonParser.Feature.ALLOW_COMMENTS)
        .build();
    m.coercionConfigFor(com.fasterxml.jackson.databind.type.LogicalType.Textual)
        .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
        .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
    return m;
  }

  /** Loads {@code file}; a relative {@code state_dir} is resolved against the file's directory. */
  public ResolvedConfig load(Path file) throws ConfigException {
    GatewayConfig raw;
    try {
      raw = MAPPER.readValue(Files.readAllBytes(file), GatewayConfig.class);
    } catch (UnrecognizedPropertyException e) {
      throw new ConfigException(file + ": unknown field " + jsonPath(e.getPath()));
    } catch (MismatchedInputException e) {
      // A value of another JSON type than its field's: the value and the type, not Jackson's text.
      String expected = expectedType(e.getTargetType());
      throw new ConfigException(file + ": " + jsonPath(e.getPath()) + ": " + (expected == null
          ? bounded(e.getOriginalMessage()) : shown(e) + " (expected: " + expected + ")"));
    } catch (com.fasterxml.jackson.databind.JsonMappingException e) {
      // A value of the wrong type or range: named by its path, as every other refusal is.
      throw new ConfigException(file + ": " + jsonPath(e.getPath()) + ": "
          + bounded(e.getOriginalMessage()));
    } catch (IOException e) {
      throw unreadable(file, e);
    }
    Path base = file.toAbsolutePath().getParent();
    return resolve(raw, base);
  }

  /**
   * {@code file} as a JSON tree, read as {@link #load} reads it, for a section read on its own
   * (ops.OpsSettings), whose refusals must then read the same: a syntax error names its line and
   * column.
   */
  public static JsonNode tree(Path file) throws ConfigException {
    try {
      return MAPPER.readTree(Files.readAllBytes(file));
    } catch (IOException e) {
      throw unreadable(file, e);
    }
  }

  /** A file that is not JSON, or cannot be read: what {@link #load} and {@link #tree} refuse. */
  private static ConfigException unreadable(Path file, IOException failure) {
    try {
      throw failure;
    } catch (com.fasterxml.jackson.core.exc.StreamReadException e) {
      // A number past its type (a u64 above 2^63 - 1) is refused while reading, where the parser
      // still knows the field; a syntax error names its line and column instead.
      String at = e.getProcessor() == null ? ""
          : e.getProcessor().getParsingContext().pathAsPointer().toString()
              .replaceFirst("^/", "").replace('/', '.');
      String what = e instanceof com.fasterxml.jackson.core.exc.InputCoercionException
          && !at.isEmpty() ? at : "invalid JSON" + (at.isEmpty() ? "" : " at " + at);
      return new ConfigException(file + ": " + what + ": "
          + bounded(e.getOriginalMessage())
          + (e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ", column "
              + e.getLocation().getColumnNr() + ")"));
    } catch (JsonProcessingException e) {
      return new ConfigException(file + ": invalid JSON: " + bounded(e.getOriginalMessage()));
    } catch (IOException e) {
      return new ConfigException(file + ": cannot read: " + e.getMessage(), e);
    }
  }

  ResolvedConfig resolve(GatewayConfig raw, Path base) throws ConfigException {
    GatewayConfig.Listen listen = raw.listen() != null ? raw.listen() : new GatewayConfig.Listen(null, null, null, null, null, null);
    String host = listen.host() != null ? listen.host() : "127.0.0.1";
    int port = listen.port() != null ? listen.port() : 31337;
    check(port >= 0 && port <= 65535, "listen.port", port, "0..65535");
    String stateDirText = require(raw.stateDir(), "state_dir");
    Path stateDir = base.resolve(stateDirText).normalize();

    GatewayConfig.Deployment d = requireObj(raw.deployment(), "deployment");
    long realm = requireLong(d.realm(), "deployment.realm");
    String realmName = require(d.realmName(), "deployment.realm_name");
    try {
      TransitDefinition.checkRealmName(realmName);
    } catch (IllegalArgumentException e) {
      throw new ConfigException("deployment.realm_name: " + e.getMessage(), e);
    }
    long service = requireLong(d.service(), "deployment.service");
    // 0 is the engine's "no recipient": request proofs would not be checked against this service.
    check(service != 0, "deployment.service", service, "1..9223372036854775807");
    long ingress = requireLong(d.ingress(), "deployment.ingress");
    long ttl = d.ticketTtlMs() != null ? d.ticketTtlMs() : 3_600_000L;
    check(ttl > 0 && ttl <= 7L * 24 * 3_600_000, "deployment.ticket_ttl_ms", ttl, "1..604800000");

    Limits limits = (raw.limits() != null ? raw.limits() : Limits.defaults()).withDefaults();
    validateLimits(limits);
    ResolvedConfig.Engine engine = engine(raw.engine(), raw.jvm(), stateDir, ttl);
    ResolvedConfig.Journal journal = journal(raw.journal(), stateDir);

    Map<String, ResolvedConfig.Publication> pubs = new LinkedHashMap<>();
    List<GatewayConfig.PublicationConfig> pubList = raw.publications() != null ? raw.publications() : List.of();
    check(!pubList.isEmpty(), "publications", "[]", "at least one publication");
    Set<Long> objectIds = new HashSet<>();
    for (int i = 0; i < pubList.size(); i++) {
      ResolvedConfig.Publication p = publication(pubList.get(i), "publications[" + i + "]", stateDir);
      if (pubs.putIfAbsent(p.name(), p) != null) {
        throw new ConfigException("publications[" + i + "].name: duplicate name " + p.name());
      }
      if (!objectIds.add(p.declaration().getObjectId())) {
        throw new ConfigException("publications[" + i + "].object_id: duplicate object id "
            + Long.toUnsignedString(p.declaration().getObjectId()));
      }
    }

    List<ResolvedConfig.Caller> callers = new ArrayList<>();
    List<GatewayConfig.CallerConfig> callerList = raw.callers() != null ? raw.callers() : List.of();
    check(!callerList.isEmpty(), "callers", "[]", "at least one caller");
    Set<String> names = new HashSet<>();
    Set<Long> principals = new HashSet<>();
    Set<Path> credentialFiles = new HashSet<>();
    // Every principal gets a dedicated key (profile): none shared with another caller, nor with
    // the gateway's own ticket and inspection keys, nor used as a credential file.
    Set<Path> keyFiles = new HashSet<>(List.of(StateDirectory.ticketKeyFile(stateDir).normalize(),
        StateDirectory.inspectionKeyFile(stateDir).normalize()));
    for (int i = 0; i < callerList.size(); i++) {
      String at = "callers[" + i + "]";
      ResolvedConfig.Caller c = caller(callerList.get(i), at, stateDir, pubs);
      if (!names.add(c.name())) {
        throw new ConfigException(at + ".name: duplicate caller name " + c.name());
      }
      // A principal is dedicated to one admission stream (one caller mapping).
      if (!principals.add(c.principal())) {
        throw new ConfigException(at + ".principal: principal "
            + Long.toUnsignedString(c.principal()) + " is already mapped to another caller");
      }
      if (!credentialFiles.add(c.credentialFile()) || keyFiles.contains(c.credentialFile())) {
        throw new ConfigException(at + ".credential_file: shared with another caller or a key");
      }
      if (!keyFiles.add(c.principalKeyFile()) || credentialFiles.contains(c.principalKeyFile())) {
        throw new ConfigException(at + ".principal_key_file: shared with another caller, a"
            + " credential or the gateway's own keys");
      }
      callers.add(c);
    }
    return new ResolvedConfig(host, port, stateDir, realm, realmName, service, ingress, ttl, limits,
        engine, journal, Map.copyOf(pubs), List.copyOf(callers), transport(listen, base),
        segments(raw.segments(), stateDir));
  }

  /** Engine and JVM sizing with the machine-sized defaults of {@link DuckSettings}. */
  private static ResolvedConfig.Engine engine(GatewayConfig.Engine e, GatewayConfig.Jvm jvm,
      Path stateDir, long ticketTtl) throws ConfigException {
    GatewayConfig.Engine raw = e != null ? e : new GatewayConfig.Engine(null, null, null, null,
        null, null, null, null, null, null);
    long memory = raw.memoryLimitBytes() != null ? raw.memoryLimitBytes()
        : DuckSettings.defaultMemoryLimitBytes();
    check(memory >= DuckSettings.MIN_MEMORY_LIMIT_BYTES, "engine.memory_limit_bytes", memory,
        ">= " + DuckSettings.MIN_MEMORY_LIMIT_BYTES);
    int threads = raw.threads() != null ? raw.threads()
        : Math.min(MAX_ENGINE_THREADS, DuckSettings.defaultThreads());
    check(threads >= 1 && threads <= MAX_ENGINE_THREADS, "engine.threads", threads,
        "1.." + MAX_ENGINE_THREADS);
    Path temp = stateDir.resolve(raw.tempDir() != null ? raw.tempDir() : "engine/duckdb-tmp")
        .normalize();
    long allocator = raw.allocatorBytes() != null ? raw.allocatorBytes() : 1L << 30;
    check(allocator >= 16L << 20, "engine.allocator_bytes", allocator, ">= 16 MiB");
    long heap = jvm != null && jvm.heapBytes() != null ? jvm.heapBytes() : DEFAULT_HEAP_BYTES;
    check(heap >= 128L << 20, "jvm.heap_bytes", heap, ">= 128 MiB");
    RetentionPolicy d = RetentionPolicy.defaults();
    long age = raw.retentionMaxAgeMs() != null ? raw.retentionMaxAgeMs() : d.maxAge().toMillis();
    check(age >= 1000, "engine.retention_max_age_ms", age, ">= 1000");
    long bytes = raw.retentionMaxBytes() != null ? raw.retentionMaxBytes() : d.maxBytes();
    check(bytes >= 1, "engine.retention_max_bytes", bytes, ">= 1");
    long every = raw.retentionCheckMs() != null ? raw.retentionCheckMs()
        : d.interval().toMillis();
    check(every >= 100 && every <= age, "engine.retention_check_ms", every,
        "100..retention_max_age_ms");
    LeasePolicy l = LeasePolicy.defaults();
    long lease = raw.leaseMs() != null ? raw.leaseMs() : l.lease().toMillis();
    check(lease >= LeasePolicy.MIN_LEASE.toMillis() && lease <= MAX_LEASE_MS, "engine.lease_ms",
        lease, LeasePolicy.MIN_LEASE.toMillis() + ".." + MAX_LEASE_MS);
    // Absent, the scan follows the lease: half of it, so a takeover needs at most 1.5 leases.
    long scan = raw.leaseScanMs() != null ? raw.leaseScanMs()
        : raw.leaseMs() != null ? Math.max(LeasePolicy.MIN_SCAN.toMillis(), lease / 2)
        : l.scan().toMillis();
    check(scan >= LeasePolicy.MIN_SCAN.toMillis() && scan <= lease, "engine.lease_scan_ms", scan,
        LeasePolicy.MIN_SCAN.toMillis() + "..lease_ms");
    // Absent or 0: every statement's history is kept. Otherwise it outlives the result's age, the
    // sweep interval by which its release may follow that age, and the longest-lived ticket after
    // it (a replayed GetFlightInfo signs one until the result is released), so a ticket that
    // still verifies names a query the journal still knows.
    long history = raw.historyMaxAgeMs() != null ? raw.historyMaxAgeMs() : 0;
    long least = age > Long.MAX_VALUE - ticketTtl - every ? Long.MAX_VALUE
        : age + every + ticketTtl;
    check(history == 0 || history >= least, "engine.history_max_age_ms", history,
        "0 or >= retention_max_age_ms + retention_check_ms + deployment.ticket_ttl_ms ("
            + least + ")");
    return new ResolvedConfig.Engine(memory, threads, temp, allocator, heap, new RetentionPolicy(
        java.time.Duration.ofMillis(age), bytes, java.time.Duration.ofMillis(every),
        java.time.Duration.ofMillis(history)),
        new LeasePolicy(java.time.Duration.ofMillis(lease), java.time.Duration.ofMillis(scan)));
  }

  /**
   * The journal: SQLite unless {@code journal.kind} is {@code postgresql}. The password file is
   * read here, once, at start (and refused when group or others may read it); its one line is
   * the password.
   */
  private static ResolvedConfig.Journal journal(GatewayConfig.Journal j, Path stateDir)
      throws ConfigException {
    String kind = j == null || j.kind() == null ? "sqlite" : j.kind();
    check(kind.equals("sqlite") || kind.equals("postgresql"), "journal.kind", kind,
        "sqlite or postgresql");
    if (kind.equals("sqlite")) {
      check(j == null || (j.url() == null && j.host() == null && j.port() == null
              && j.database() == null && j.user() == null && j.passwordFile() == null
              && j.poolSize() == null && j.connectionTimeoutMs() == null
              && j.lockTimeoutMs() == null && j.statementTimeoutMs() == null
              && j.idleInTransactionTimeoutMs() == null),
          "journal.kind", kind, "postgresql when database settings are given");
      return ResolvedConfig.Journal.SQLITE;
    }
    String url;
    if (j.url() != null) {
      url = j.url();
      // Its parameters may hold a password: refusals show the URL without them.
      check(j.host() == null && j.port() == null && j.database() == null, "journal.url",
          PostgresSettings.shown(url), "either url or host, port and database, not both");
      check(url.startsWith("jdbc:postgresql://"), "journal.url", PostgresSettings.shown(url),
          "jdbc:postgresql://host:port/database");
      // A URL parameter would override the journal's own setting of the same name.
      List<String> own = PostgresSettings.journalParameters(url);
      check(own.isEmpty(), "journal.url", PostgresSettings.shown(url) + " sets "
          + String.join(", ", own), PostgresSettings.EXPECTED_PARAMETERS);
    } else {
      String host = j.host() != null ? j.host() : "127.0.0.1";
      int port = j.port() != null ? j.port() : 5432;
      check(port >= 1 && port <= 65535, "journal.port", port, "1..65535");
      String database = name(j.database() != null ? j.database() : "transit_journal",
          "journal.database");
      url = PostgresSettings.url(host, port, database);
    }
    String user = name(j.user() != null ? j.user() : "transit", "journal.user");
    Path pwFile = stateDir.resolve(require(j.passwordFile(), "journal.password_file")).normalize();
    check(Files.isReadable(pwFile), "journal.password_file", pwFile, "a readable file");
    checkPrivate(pwFile, "journal.password_file");
    String password = new String(StateDirectory.readBounded(pwFile, 1024, "journal.password_file"),
        java.nio.charset.StandardCharsets.UTF_8).strip();
    check(!password.isEmpty() && password.indexOf('\n') < 0, "journal.password_file", pwFile,
        "one non-empty line");
    int pool = j.poolSize() != null ? j.poolSize() : 8;
    check(pool >= 1 && pool <= 256, "journal.pool_size", pool, "1..256");
    long connect = j.connectionTimeoutMs() != null ? j.connectionTimeoutMs() : 5_000;
    check(connect >= 250 && connect <= 600_000, "journal.connection_timeout_ms", connect,
        "250..600000");
    long lock = j.lockTimeoutMs() != null ? j.lockTimeoutMs() : 10_000;
    check(lock >= 1 && lock <= 600_000, "journal.lock_timeout_ms", lock, "1..600000");
    long statement = j.statementTimeoutMs() != null ? j.statementTimeoutMs() : 30_000;
    check(statement >= 1 && statement <= 3_600_000, "journal.statement_timeout_ms", statement,
        "1..3600000");
    long idle = j.idleInTransactionTimeoutMs() != null ? j.idleInTransactionTimeoutMs() : 60_000;
    check(idle >= 1 && idle <= 3_600_000, "journal.idle_in_transaction_timeout_ms", idle,
        "1..3600000");
    return new ResolvedConfig.Journal(new PostgresSettings(
        url, user, password, pool, java.time.Duration.ofMillis(connect),
        java.time.Duration.ofMillis(lock), java.time.Duration.ofMillis(statement),
        java.time.Duration.ofMillis(idle)));
  }

  /**
   * Where retained segments are kept. {@code s3} needs an endpoint, a bucket and two private key
   * files (read here, once: a reload does not reconnect the engine); the fields of {@code s3} with
   * {@code local} are refused, so a half-edited file never silently keeps segments locally.
   */
  private static SegmentSettings segments(GatewayConfig.Segments raw, Path stateDir)
      throws ConfigException {
    String kind = raw == null || raw.kind() == null ? "local" : raw.kind();
    check(kind.equals("local") || kind.equals("s3"), "segments.kind", kind, "local or s3");
    if (kind.equals("local")) {
      check(raw == null || raw.equals(new GatewayConfig.Segments(raw.kind(), null, null, null,
          null, null, null, null, null, null, null, null)), "segments", "object-store fields",
          "only kind when kind is local");
      return SegmentSettings.local();
    }
    URI endpoint;
    String endpointText = require(raw.endpoint(), "segments.endpoint");
    // Refusals show it without user information or query, which may hold keys.
    String endpointShown = PostgresSettings.shown(endpointText);
    try {
      endpoint = new URI(endpointText);
    } catch (java.net.URISyntaxException e) {
      throw new ConfigException("segments.endpoint: " + endpointShown + " (expected: an http or"
          + " https URI)");
    }
    check(("http".equals(endpoint.getScheme()) || "https".equals(endpoint.getScheme()))
            && endpoint.getHost() != null && endpoint.getUserInfo() == null
            && endpoint.getQuery() == null && endpoint.getFragment() == null
            && (endpoint.getPath() == null || endpoint.getPath().isEmpty()
                || endpoint.getPath().equals("/")),
        "segments.endpoint", endpointShown, "http(s)://host[:port] without path, user or query");
    // Segment bytes are callers' results: in clear text only over loopback or a network the
    // operator states is private, as for the listener.
    check("https".equals(endpoint.getScheme()) || loopback(endpoint.getHost())
            || Boolean.TRUE.equals(raw.privateNetwork()),
        "segments.endpoint", endpointShown,
        "https, or http to a loopback address, unless segments.private_network is true");
    String region = raw.region() != null ? raw.region() : "us-east-1";
    check(region.matches("[a-z0-9-]{1,64}"), "segments.region", region, "a region name [a-z0-9-]");
    String bucket = require(raw.bucket(), "segments.bucket");
    check(bucket.matches("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"), "segments.bucket", bucket,
        "an S3 bucket name: 3..63 of [a-z0-9.-]");
    String prefix = raw.prefix() != null ? raw.prefix() : "segments/";
    check(prefix.matches("[A-Za-z0-9._/-]{0,256}") && !prefix.startsWith("/"),
        "segments.prefix", prefix, "at most 256 of [A-Za-z0-9._/-], not starting with /");
    String access = keyFile(raw.accessKeyFile(), "segments.access_key_file", stateDir);
    String secret = keyFile(raw.secretKeyFile(), "segments.secret_key_file", stateDir);
    long connect = raw.connectTimeoutMs() != null ? raw.connectTimeoutMs() : 2_000;
    check(connect >= 100 && connect <= 60_000, "segments.connect_timeout_ms", connect,
        "100..60000");
    long request = raw.requestTimeoutMs() != null ? raw.requestTimeoutMs() : 30_000;
    check(request >= 1_000 && request <= 600_000, "segments.request_timeout_ms", request,
        "1000..600000");
    int connections = raw.maxConnections() != null ? raw.maxConnections() : 50;
    check(connections >= 1 && connections <= 1024, "segments.max_connections", connections,
        "1..1024");
    long minAge = raw.sweepMinAgeMs() != null ? raw.sweepMinAgeMs() : 3_600_000;
    check(minAge >= 0 && minAge <= 7L * 24 * 3_600_000, "segments.sweep_min_age_ms", minAge,
        "0..604800000");
    return new SegmentSettings.ObjectStore(endpoint, region, bucket, prefix, access, secret,
        java.time.Duration.ofMillis(connect), java.time.Duration.ofMillis(request), connections,
        java.time.Duration.ofMillis(minAge));
  }

  /** One line of a private (0600/0400) file under the state directory, without its newline. */
  private static String keyFile(String name, String field, Path stateDir) throws ConfigException {
    Path file = stateDir.resolve(require(name, field)).normalize();
    check(Files.isReadable(file), field, file, "a readable file");
    checkPrivate(file, field);
    // One line of at most 1024 characters, checked below; a newline or two may follow it.
    String value = new String(StateDirectory.readBounded(file, 1026, field),
        java.nio.charset.StandardCharsets.UTF_8).strip();
    // The value itself is never part of a message.
    check(!value.isEmpty() && value.length() <= 1024 && value.chars().allMatch(c -> c > 0x20
        && c < 0x7f), field, file, "one line of 1..1024 printable ASCII characters");
    return value;
  }

  /** Unix socket and TLS paths resolve against the config file's directory, like state_dir. */
  private static ResolvedConfig.Transport transport(GatewayConfig.Listen listen, Path base)
      throws ConfigException {
    boolean tcp = listen.tcp() == null || listen.tcp();
    Path socket = null;
    if (listen.unixSocket() != null) {
      socket = base.resolve(require(listen.unixSocket(), "listen.unix_socket")).normalize();
      // sun_path holds 107 bytes; a longer path fails at bind with an obscure error.
      check(socket.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= 107,
          "listen.unix_socket", socket, "a path of at most 107 bytes");
    }
    check(tcp || socket != null, "listen.tcp", false, "true unless listen.unix_socket is set");
    Path cert = null;
    Path key = null;
    if (listen.tls() != null) {
      cert = base.resolve(require(listen.tls().certFile(), "listen.tls.cert_file")).normalize();
      key = base.resolve(require(listen.tls().keyFile(), "listen.tls.key_file")).normalize();
      check(Files.isReadable(cert), "listen.tls.cert_file", cert, "a readable PEM certificate chain");
      check(Files.isReadable(key), "listen.tls.key_file", key, "a readable PKCS#8 PEM private key");
      checkPrivate(key, "listen.tls.key_file");
    }
    String host = listen.host() != null ? listen.host() : "127.0.0.1";
    // The profile's listener is private behind a TLS edge: plaintext TCP beyond loopback needs
    // the operator's explicit word that the network is private (or the gateway's own TLS).
    check(!tcp || cert != null || loopback(host) || Boolean.TRUE.equals(listen.privateNetwork()),
        "listen.host", host, "a loopback address for plaintext TCP, unless listen.tls is set or"
            + " listen.private_network is true");
    return new ResolvedConfig.Transport(tcp, socket, cert, key,
        Boolean.TRUE.equals(listen.privateNetwork()));
  }

  /**
   * Whether {@code host} certainly names this machine's loopback. Only {@code localhost} and IP
   * literals are judged (no DNS lookup); any other name may resolve anywhere, so it is not.
   */
  static boolean loopback(String host) {
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    if (!host.matches("[0-9.]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*")) {
      return false;
    }
    try {
      return java.net.InetAddress.getByName(host).isLoopbackAddress(); // a literal: no lookup
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  /** A private key readable by group or others is refused, like every other secret. */
  private static void checkPrivate(Path file, String field) throws ConfigException {
    try {
      for (java.nio.file.attribute.PosixFilePermission p : Files.getPosixFilePermissions(file)) {
        if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
          throw new ConfigException(field + ": " + file + " lets group or others access a private"
              + " key (expected mode 0600 or 0400)");
        }
      }
    } catch (IOException e) {
      throw new ConfigException(field + ": " + file + ": cannot read: " + e.getMessage(), e);
    }
  }

  private static ResolvedConfig.Publication publication(
      GatewayConfig.PublicationConfig p, String at, Path stateDir) throws ConfigException {
    String name = name(p.name(), at + ".name");
    String format = require(p.format(), at + ".format").toLowerCase(Locale.ROOT);
    check(FORMATS.contains(format), at + ".format", format, "one of " + FORMATS);
    List<String> files = p.files() != null ? p.files() : List.of();
    check(!files.isEmpty(), at + ".files", "[]", "at least one data file");
    List<Path> paths = new ArrayList<>();
    for (int i = 0; i < files.size(); i++) {
      String f = files.get(i);
      // DuckDB reads *, ? and [ in a path as a pattern: another file than the one published
      // would be scanned, and only the named one watched for changes.
      check(f.indexOf('*') < 0 && f.indexOf('?') < 0 && f.indexOf('[') < 0,
          at + ".files[" + i + "]", bounded(f), "a file path without *, ? or [");
      paths.add(stateDir.resolve(f).normalize());
    }
    List<GatewayConfig.ColumnConfig> cols = p.columns() != null ? p.columns() : List.of();
    check(!cols.isEmpty(), at + ".columns", "[]", "at least one column");
    TableDeclaration.Builder decl = TableDeclaration.newBuilder()
        .setCatalog(name(p.catalog(), at + ".catalog"))
        .setDbSchema(name(p.schema(), at + ".schema"))
        .setTable(name(p.table(), at + ".table"))
        .setOwner(require(p.owner(), at + ".owner"))
        .setObjectId(requireLong(p.objectId(), at + ".object_id"))
        .setMetadataRef(require(p.metadataRef(), at + ".metadata_ref"))
        .setSource(requireLong(p.source(), at + ".source"));
    Set<String> seen = new HashSet<>();
    for (int j = 0; j < cols.size(); j++) {
      GatewayConfig.ColumnConfig c = cols.get(j);
      String cat = at + ".columns[" + j + "]";
      String cname = name(c.name(), cat + ".name");
      if (!seen.add(cname.toLowerCase(Locale.ROOT))) {
        throw new ConfigException(cat + ".name: duplicate column " + cname);
      }
      String type = require(c.type(), cat + ".type");
      try {
        LogicalType.valueOf(type);
      } catch (IllegalArgumentException e) {
        throw new ConfigException(cat + ".type: " + type + " (expected one of "
            + java.util.Arrays.toString(LogicalType.values()) + ")");
      }
      boolean nullable = c.nullable() == null || c.nullable();
      decl.addColumns(ColumnDeclaration.newBuilder().setName(cname).setLogicalType(type).setNullable(nullable));
    }
    return new ResolvedConfig.Publication(name, decl.build(), format, List.copyOf(paths));
  }

  private static ResolvedConfig.Caller caller(
      GatewayConfig.CallerConfig c, String at, Path stateDir,
      Map<String, ResolvedConfig.Publication> pubs) throws ConfigException {
    String name = name(c.name(), at + ".name");
    Path cred = stateDir.resolve(require(c.credentialFile(), at + ".credential_file")).normalize();
    long principal = requireLong(c.principal(), at + ".principal");
    Path key = stateDir.resolve(require(c.principalKeyFile(), at + ".principal_key_file")).normalize();
    long epoch = c.credentialEpoch() != null
        ? requireLong(c.credentialEpoch(), at + ".credential_epoch") : 1L;
    long revision = c.bindingRevision() != null
        ? requireLong(c.bindingRevision(), at + ".binding_revision") : 1L;
    if (c.role() != null) {
      requireLong(c.role(), at + ".role"); // a u64 field: a negative one is refused
    }
    long requests = requireLong(c.requests(), at + ".requests");
    String pub = require(c.publication(), at + ".publication");
    if (!pubs.containsKey(pub)) {
      throw new ConfigException(at + ".publication: " + pub + " is not a configured publication");
    }
    GatewayConfig.Rights r = c.rights() != null ? c.rights() : new GatewayConfig.Rights(true, true, true);
    return new ResolvedConfig.Caller(name, cred, principal, key, c.role() != null,
        c.role() != null ? c.role() : 0L, epoch, revision, requests, pub,
        r.send() == null || r.send(), r.inspect() == null || r.inspect(), r.read() == null || r.read());
  }

  /** A Jackson path as the file spells it: {@code limits.max_connections}, {@code callers[1].name}. */
  static String jsonPath(List<com.fasterxml.jackson.databind.JsonMappingException.Reference> path) {
    StringBuilder b = new StringBuilder();
    for (com.fasterxml.jackson.databind.JsonMappingException.Reference r : path) {
      if (r.getFieldName() != null) {
        b.append(b.length() > 0 ? "." : "").append(bounded(r.getFieldName()));
      } else if (r.getIndex() >= 0) {
        b.append('[').append(r.getIndex()).append(']');
      }
    }
    return b.length() > 0 ? b.toString() : "(top level)";
  }

  /** What a refused value should have been, for the field types a configuration has. */
  private static String expectedType(Class<?> target) {
    if (target == Integer.class || target == int.class || target == Long.class
        || target == long.class) {
      return "an integer";
    } else if (target == Boolean.class || target == boolean.class) {
      return "true or false";
    } else if (target == String.class) {
      return "a string";
    } else if (target != null && java.util.Collection.class.isAssignableFrom(target)) {
      return "an array";
    }
    return null;
  }

  /** The refused value as the file has it: a string quoted, a container by its kind. */
  private static String shown(MismatchedInputException e) {
    if (e instanceof com.fasterxml.jackson.databind.exc.InvalidFormatException f) {
      Object v = f.getValue();
      return v instanceof String text ? "\"" + bounded(text) + "\"" : bounded(String.valueOf(v));
    }
    if (e.getProcessor() instanceof com.fasterxml.jackson.core.JsonParser p
        && p.currentToken() != null) {
      return switch (p.currentToken()) {
        case START_OBJECT -> "an object";
        case START_ARRAY -> "an array";
        default -> {
          try {
            String text = bounded(p.getText());
            yield p.currentToken() == com.fasterxml.jackson.core.JsonToken.VALUE_STRING
                ? "\"" + text + "\"" : text;
          } catch (IOException unreadable) {
            yield "a " + p.currentToken().asString();
          }
        }
      };
    }
    return "the value";
  }

  /** A message or name as refusals show it: at most 160 characters. */
  private static String bounded(String s) {
    return s == null || s.length() <= 160 ? String.valueOf(s) : s.substring(0, 160) + "…";
  }

  /** The most threads a ForkJoinPool, and so a {@code LastIdlePool}, can hold. */
  static final int MAX_POOL_THREADS = 32767;
  /** Admissions and compilations (at most 1024) each hold a service thread, plus eight more. */
  static final int MAX_ADMISSIONS = MAX_POOL_THREADS - 1024 - 8;
  private static final long DAY_MS = 86_400_000L;

  private static void validateLimits(Limits l) throws ConfigException {
    check(l.maxConnections() >= 1, "limits.max_connections", l.maxConnections(), ">= 1");
    check(l.maxInboundMessageBytes() >= 1024 && l.maxInboundMessageBytes() <= 16 * 1024,
        "limits.max_inbound_message_bytes", l.maxInboundMessageBytes(), "1024..16384");
    check(l.maxInboundMetadataBytes() >= 1024 && l.maxInboundMetadataBytes() <= 64 * 1024,
        "limits.max_inbound_metadata_bytes", l.maxInboundMetadataBytes(), "1024..65536");
    // Thread pools (LastIdlePool, a ForkJoinPool) hold at most MAX_POOL_THREADS threads; a
    // producer thread per live stream by default, one service thread per admission.
    check(l.maxLiveStreams() >= 1 && l.maxLiveStreams() <= MAX_POOL_THREADS,
        "limits.max_live_streams", l.maxLiveStreams(), "1.." + MAX_POOL_THREADS);
    check(l.admissionPerGateway() >= 1 && l.admissionPerGateway() <= MAX_ADMISSIONS,
        "limits.admission_per_gateway", l.admissionPerGateway(), "1.." + MAX_ADMISSIONS);
    check(l.admissionPerCaller() >= 1 && l.admissionPerCaller() <= l.admissionPerGateway(),
        "limits.admission_per_caller", l.admissionPerCaller(), "1..admission_per_gateway");
    check(l.streamAllocatorBytes() >= 1 << 20 && l.streamAllocatorBytes() <= l.rootAllocatorBytes(),
        "limits.stream_allocator_bytes", l.streamAllocatorBytes(), "1 MiB..root_allocator_bytes");
    check(l.controlDeadlineDefaultMs() >= 1 && l.controlDeadlineDefaultMs() <= l.controlDeadlineMaxMs(),
        "limits.control_deadline_default_ms", l.controlDeadlineDefaultMs(), "1..control_deadline_max_ms");
    check(l.creditStallMs() >= 100 && l.creditStallMs() <= DAY_MS, "limits.credit_stall_ms",
        l.creditStallMs(), "100..86400000");
    check(l.rowsPerSegment() >= 1 && l.rowsPerSegment() <= 1 << 20,
        "limits.rows_per_segment", l.rowsPerSegment(), "1..1048576");
    check(l.maxSegmentBytes() >= 1024 && l.maxSegmentBytes() <= l.streamAllocatorBytes(),
        "limits.max_segment_bytes", l.maxSegmentBytes(), "1024..stream_allocator_bytes");
    check(l.maxResultRows() >= 1, "limits.max_result_rows", l.maxResultRows(), ">= 1");
    check(l.maxResultBytes() >= 1, "limits.max_result_bytes", l.maxResultBytes(), ">= 1");
    check(l.uploadPartBytes() >= 256 && l.uploadPartBytes() <= 8192,
        "limits.upload_part_bytes", l.uploadPartBytes(), "256..8192");
    check(l.diagnosticMetadataBytes() >= 0 && l.diagnosticMetadataBytes() <= 16384,
        "limits.diagnostic_metadata_bytes", l.diagnosticMetadataBytes(), "0..16384");
    check(l.producerThreads() >= 1 && l.producerThreads() <= MAX_POOL_THREADS,
        "limits.producer_threads", l.producerThreads(), "1.." + MAX_POOL_THREADS);
    check(l.writerThreads() >= 1 && l.writerThreads() <= MAX_POOL_THREADS,
        "limits.writer_threads", l.writerThreads(), "1.." + MAX_POOL_THREADS);
    check(l.dataDeadlineDefaultMs() >= 100 && l.dataDeadlineDefaultMs() <= l.dataDeadlineMaxMs(),
        "limits.data_deadline_default_ms", l.dataDeadlineDefaultMs(), "100..data_deadline_max_ms");
    // 256 bytes still lets a small catalog result or a one-row statement through, so a tight
    // budget can be tried (and tested) on metadata streams too; smaller refuses nearly everything.
    check(l.maxResponseBytesPerStream() >= 256, "limits.max_response_bytes_per_stream",
        l.maxResponseBytesPerStream(), ">= 256");
    check(l.handshakeTimeoutMs() >= 100, "limits.handshake_timeout_ms", l.handshakeTimeoutMs(), ">= 100");
    // grpc-java (KeepAliveManager.clampKeepAliveTimeInNanos) raises any server keepalive time
    // below 10 s to 10 s; refusing it here keeps the configured value the effective one.
    check(l.keepaliveTimeMs() >= 10_000, "limits.keepalive_time_ms", l.keepaliveTimeMs(), ">= 10000");
    check(l.keepaliveTimeoutMs() >= 1_000, "limits.keepalive_timeout_ms", l.keepaliveTimeoutMs(), ">= 1000");
    check(l.permitKeepaliveTimeMs() >= 1_000, "limits.permit_keepalive_time_ms",
        l.permitKeepaliveTimeMs(), ">= 1000");
    check(l.maxConnectionIdleMs() >= 100, "limits.max_connection_idle_ms", l.maxConnectionIdleMs(), ">= 100");
    check(l.maxConnectionAgeMs() >= 100, "limits.max_connection_age_ms", l.maxConnectionAgeMs(), ">= 100");
    check(l.maxConnectionAgeGraceMs() >= 0, "limits.max_connection_age_grace_ms",
        l.maxConnectionAgeGraceMs(), ">= 0");
    check(l.compilePerGateway() >= 1 && l.compilePerGateway() <= 1024,
        "limits.compile_per_gateway", l.compilePerGateway(), "1..1024");
    check(l.compilePerCaller() >= 1 && l.compilePerCaller() <= l.compilePerGateway(),
        "limits.compile_per_caller", l.compilePerCaller(), "1..compile_per_gateway");
    check(l.compileTimeoutMs() >= 100 && l.compileTimeoutMs() <= 60_000,
        "limits.compile_timeout_ms", l.compileTimeoutMs(), "100..60000");
    check(l.maxLiveStreamsPerCaller() >= 1 && l.maxLiveStreamsPerCaller() <= l.maxLiveStreams(),
        "limits.max_live_streams_per_caller", l.maxLiveStreamsPerCaller(), "1..max_live_streams");
    check(l.maxRstFramesPerWindow() >= 1, "limits.max_rst_frames_per_window",
        l.maxRstFramesPerWindow(), ">= 1");
    check(l.rstFramesWindowMs() >= 1_000 && l.rstFramesWindowMs() <= 3_600_000,
        "limits.rst_frames_window_ms", l.rstFramesWindowMs(), "1000..3600000");
    check(l.unauthenticatedConnectionMs() >= 100, "limits.unauthenticated_connection_ms",
        l.unauthenticatedConnectionMs(), ">= 100");
  }

  private static String name(String v, String field) throws ConfigException {
    String s = require(v, field);
    check(NAME.matcher(s).matches(), field, s, "an identifier [A-Za-z_][A-Za-z0-9_.-]*");
    return s;
  }

  private static <T> T requireObj(T v, String field) throws ConfigException {
    if (v == null) {
      throw new ConfigException(field + ": missing (required)");
    }
    return v;
  }

  private static String require(String v, String field) throws ConfigException {
    if (v == null || v.isBlank()) {
      throw new ConfigException(field + ": missing (required)");
    }
    return v;
  }

  private static long requireLong(Long v, String field) throws ConfigException {
    if (v == null) {
      throw new ConfigException(field + ": missing (required unsigned 64-bit integer)");
    }
    // JSON's negative numbers would be read as unsigned values past 2^63 - 1.
    check(v >= 0, field, v, "0..9223372036854775807");
    return v;
  }

  /** The JVM heap when {@code jvm.heap_bytes} is absent (docs/limits.md). */
  public static final long DEFAULT_HEAP_BYTES = 1L << 30;
  /** Longest execution lease: a dead replica's queries wait this long for a takeover. */
  static final long MAX_LEASE_MS = 600_000;

  private static void check(boolean ok, String field, Object value, String expected)
      throws ConfigException {
    if (!ok) {
      throw new ConfigException(field + ": " + value + " (expected: " + expected + ")");
    }
  }
}
