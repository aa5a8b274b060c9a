package io.transit.flight.server.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.server.ops.LogSetup;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code init --parquet FILE}: writes a configuration that serves one Parquet file at once — the
 * publication's columns read from the file's footer, one caller, the ids of a fresh single-gateway
 * deployment — then generates the caller's credential and key (0600, in the state directory) and
 * checks the result as {@code check-config} does. Refuses to overwrite a configuration. Main
 * thread only.
 */
@Command(name = "init", mixinStandardHelpOptions = true,
    description = "Write a working configuration serving one Parquet file.")
final class Init implements Callable<Integer> {
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
  /** The Parquet (DuckDB) column types a publication can declare, and their declared names. */
  private static final Map<String, String> TYPES = Map.of(
      "BIGINT", "INT64", "UBIGINT", "UINT64", "DOUBLE", "FLOAT64", "VARCHAR", "UTF8",
      "BOOLEAN", "BOOL", "DATE", "DATE");

  @Option(names = "--parquet", required = true, paramLabel = "FILE",
      description = "the Parquet file to publish")
  Path parquet;
  @Option(names = "--table", paramLabel = "NAME",
      description = "the Table's name (default: the file's name)")
  String table;
  @Option(names = "--caller", paramLabel = "NAME", defaultValue = "analyst",
      description = "the caller's name (default: ${DEFAULT-VALUE})")
  String caller;
  @Option(names = "--config", paramLabel = "FILE", defaultValue = "gateway.json",
      description = "where to write the configuration (default: ${DEFAULT-VALUE})")
  Path config;
  @Option(names = "--state-dir", paramLabel = "DIR", defaultValue = "state",
      description = "the state directory, relative to the configuration's (default: ${DEFAULT-VALUE})")
  String stateDir;
  @Option(names = "--port", paramLabel = "N", defaultValue = "31337",
      description = "the listener's port (default: ${DEFAULT-VALUE})")
  int port;

  @Override
  public Integer call() throws ConfigException, IOException {
    LogSetup.apply("warn", "text");
    if (Files.exists(config)) {
      throw new ConfigException(config + " exists; init writes a new configuration only");
    }
    if (!Files.isRegularFile(parquet)) {
      throw new ConfigException("--parquet: " + parquet + " is not a file");
    }
    String named = parquet.toString();
    if (named.indexOf('*') >= 0 || named.indexOf('?') >= 0 || named.indexOf('[') >= 0) {
      // DuckDB would read the path as a pattern, and the daemon refuses it too (configuration.md).
      throw new ConfigException("--parquet: " + parquet + " (expected: a path without *, ? or [)");
    }
    String name = table != null ? table
        : parquet.getFileName().toString().replaceFirst("\\.parquet$", "").replaceAll("\\W", "_");
    requireName("--table", name);
    requireName("--caller", caller);
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.putObject("listen").put("host", "127.0.0.1").put("port", port);
    root.put("state_dir", stateDir);
    // One gateway, one realm: the ids only need to be distinct within this deployment.
    root.putObject("deployment").put("realm", 1).put("realm_name", "local").put("service", 1)
        .put("ingress", 1);
    ObjectNode pub = root.putArray("publications").addObject();
    pub.put("name", name).put("catalog", "transit").put("schema", "public").put("table", name)
        .put("owner", System.getProperty("user.name", "operator")).put("object_id", 1001)
        .put("source", 1).put("metadata_ref", name + "@" + Files.getLastModifiedTime(parquet))
        .put("format", "parquet");
    pub.putArray("files").add(parquet.toAbsolutePath().normalize().toString());
    var columns = pub.putArray("columns");
    for (Map.Entry<String, String[]> c : columns(parquet).entrySet()) {
      columns.addObject().put("name", c.getKey()).put("type", c.getValue()[0])
          .put("nullable", !"REQUIRED".equals(c.getValue()[1]));
    }
    root.putArray("callers").addObject().put("name", caller)
        .put("credential_file", "credentials/" + caller + ".token")
        .put("principal", 2001).put("principal_key_file", "keys/principal-2001.key")
        .put("credential_epoch", 1).put("binding_revision", 1).put("requests", 2001)
        .put("publication", name);
    Path dir = config.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    StateDirectory.replaceDurably(config, mapper.writeValueAsBytes(root),
        PosixFilePermissions.fromString("rw-r--r--"));
    ResolvedConfig cfg;
    try {
      cfg = CheckConfig.check(config);
    } catch (ConfigException | IOException e) {
      Files.deleteIfExists(config); // nothing half-working is left behind
      throw e;
    }
    StateDirectory state = new StateDirectory(cfg.stateDir(), new SecureRandom());
    state.prepare();
    ResolvedConfig.Caller c = cfg.callers().get(0);
    state.loadOrCreateCredential(c.credentialFile());
    state.loadOrCreateKey(c.principalKeyFile());
    LogSetup.flush(); // any warning before the summary
    System.out.println("wrote " + config + ": table " + name + " (" + columns.size()
        + " columns) for caller " + caller + ", credential in " + c.credentialFile());
    System.out.println("serve it: transit-flight run --config " + config);
    return Main.OK;
  }

  private static void requireName(String option, String value) throws ConfigException {
    if (!NAME.matcher(value).matches()) {
      throw new ConfigException(option + ": " + value
          + " (expected: letters, digits and _, starting with a letter or _)");
    }
  }

  /** Each top-level column's declared type and Parquet repetition, in file order. */
  private static Map<String, String[]> columns(Path file) throws ConfigException {
    Map<String, String[]> out = new LinkedHashMap<>();
    String read = "'" + file.toAbsolutePath().toString().replace("'", "''") + "'";
    try (Connection db = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = db.createStatement()) {
      try (ResultSet r = s.executeQuery("DESCRIBE SELECT * FROM read_parquet(" + read + ")")) {
        while (r.next()) {
          String type = TYPES.get(r.getString(2));
          if (type == null) {
            throw new ConfigException(file + ": column " + r.getString(1) + " has type "
                + r.getString(2) + " (expected one of " + TYPES.keySet() + ")");
          }
          out.put(r.getString(1), new String[] {type, "OPTIONAL"});
        }
      }
      try (ResultSet r = s.executeQuery(
          "SELECT name, repetition_type FROM parquet_schema(" + read + ")")) {
        while (r.next()) {
          String[] c = out.get(r.getString(1));
          if (c != null) {
            c[1] = r.getString(2);
          }
        }
      }
    } catch (SQLException e) {
      throw new ConfigException(file + ": not a readable Parquet file: " + e.getMessage(), e);
    }
    return out;
  }
}
