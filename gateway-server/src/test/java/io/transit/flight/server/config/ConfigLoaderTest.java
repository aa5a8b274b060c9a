package io.transit.flight.server.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.embedded.DuckSettings;
import io.transit.flight.nativequery.embedded.LeasePolicy;
import io.transit.flight.nativequery.embedded.RetentionPolicy;
import io.transit.flight.nativequery.embedded.SegmentSettings;
import java.net.URI;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {
  @TempDir Path dir;

  /** A minimal valid configuration; {@code %s}: the callers (StateAccessTest shares it). */
  static final String VALID = """
      {
        "state_dir": "state",
        "deployment": {"realm": 1, "realm_name": "t", "service": 7, "ingress": 1},
        "publications": [{"name": "p", "catalog": "c", "schema": "s", "table": "t", "owner": "o",
          "object_id": 5, "source": 9, "metadata_ref": "m", "format": "parquet", "files": ["x.parquet"],
          "columns": [{"name": "a", "type": "INT64", "nullable": false}]}],
        "callers": [%s]
      }""";

  private static final String CALLER = """
      {"name": "%s", "credential_file": "credentials/%s", "principal": %d,
       "principal_key_file": "keys/%s.key", "requests": 1, "publication": "p"}""";

  private ResolvedConfig load(String json) throws Exception {
    Path f = dir.resolve("gateway.json");
    Files.writeString(f, json);
    return new ConfigLoader().load(f);
  }

  static String caller(String name, long principal) {
    return CALLER.formatted(name, name, principal, name);
  }

  @Test
  void validConfigGetsDefaults() throws Exception {
    ResolvedConfig c = load(VALID.formatted(caller("a", 10)));
    assertEquals("127.0.0.1", c.host());
    assertEquals(16 * 1024, c.limits().maxInboundMessageBytes());
    assertEquals(dir.resolve("state"), c.stateDir());
    assertEquals(1, c.callers().size());
    assertEquals(1L, c.callers().get(0).credentialEpoch());
  }

  @Test
  void deploymentIdentityIsRefusedHereNotAfterTheEngineOpened() throws Exception {
    String valid = VALID.formatted(caller("a", 10));
    // Until 2026-12-06 these passed check-config: the realm name failed the start after the
    // engine opened (exit 1 with a stack trace), service 0 turned the proof recipient check off.
    String[][] cases = {
      {"\"realm_name\": \"t\"", "\"realm_name\": \"caf\u00e9\"", "deployment.realm_name"},
      {"\"service\": 7", "\"service\": 0", "deployment.service: 0"},
      {"\"principal\": 10", "\"principal\": -1", "callers[0].principal: -1"},
    };
    for (String[] c : cases) {
      assertTrue(valid.contains(c[0]), c[0]);
      String changed = valid.replace(c[0], c[1]);
      ConfigException e = assertThrows(ConfigException.class, () -> load(changed));
      assertTrue(e.getMessage().startsWith(c[2]), e.getMessage());
    }
  }

  @Test
  void annotatedExampleParses() throws Exception {
    Path example = Path.of("..", "config", "gateway.example.json");
    ResolvedConfig c = new ConfigLoader().load(example);
    assertEquals(1, c.publications().size());
    assertTrue(c.callers().get(0).hasRole());
    assertEquals(new ResolvedConfig.Engine(2L << 30, 4,
        c.stateDir().resolve("engine/duckdb-tmp"), 1L << 30, 1L << 30,
        new RetentionPolicy(Duration.ofDays(7), 10L << 30, Duration.ofSeconds(10),
            Duration.ofDays(30)),
        LeasePolicy.defaults()), c.engine());
  }

  @Test
  void engineAndHeapDefaultToMachineSizedValuesAndAreRangeChecked() throws Exception {
    ResolvedConfig c = load(VALID.formatted(caller("a", 10)));
    assertEquals(DuckSettings.defaultMemoryLimitBytes(), c.engine().memoryLimitBytes());
    assertTrue(c.engine().memoryLimitBytes() >= 256L << 20
        && c.engine().memoryLimitBytes() <= 4L << 30);
    assertEquals(Runtime.getRuntime().availableProcessors(), c.engine().threads());
    assertEquals(dir.resolve("state/engine/duckdb-tmp"), c.engine().tempDir());
    assertEquals(ConfigLoader.DEFAULT_HEAP_BYTES, c.engine().heapBytes());
    String engine = VALID.formatted(caller("a", 10)).replace("\"state_dir\"",
        "\"engine\": {\"memory_limit_bytes\": 67108864, \"threads\": 1, \"temp_dir\": \"/tmp/x\","
            + " \"allocator_bytes\": 33554432, \"retention_max_age_ms\": 60000,"
            + " \"retention_max_bytes\": 1048576, \"retention_check_ms\": 500,"
            + " \"lease_ms\": 4000, \"lease_scan_ms\": 700},"
            + " \"jvm\": {\"heap_bytes\": 268435456}, \"state_dir\"");
    assertEquals(new ResolvedConfig.Engine(64L << 20, 1, Path.of("/tmp/x"), 32L << 20,
        256L << 20, new RetentionPolicy(Duration.ofMinutes(1), 1L << 20,
            Duration.ofMillis(500)), new LeasePolicy(Duration.ofSeconds(4), Duration.ofMillis(700))),
        load(engine).engine());
    // Without a scan interval the scan follows the lease (half of it).
    assertEquals(new LeasePolicy(Duration.ofSeconds(4), Duration.ofSeconds(2)),
        load(engine.replace(", \"lease_scan_ms\": 700", "")).engine().lease());
    assertEquals(LeasePolicy.defaults(), load(VALID.formatted(caller("a", 10))).engine().lease());
    assertMessage("engine.lease_ms", engine.replace("\"lease_ms\": 4000", "\"lease_ms\": 999"));
    assertMessage("engine.lease_ms",
        engine.replace("\"lease_ms\": 4000", "\"lease_ms\": 600001"));
    assertMessage("engine.lease_scan_ms", engine.replace("700", "99"));
    assertMessage("engine.lease_scan_ms", engine.replace("700", "4001"));
    assertEquals(RetentionPolicy.defaults(),
        load(VALID.formatted(caller("a", 10))).engine().retention());
    assertMessage("engine.retention_max_age_ms", engine.replace("60000", "10"));
    assertMessage("engine.retention_max_bytes", engine.replace("1048576", "0"));
    assertMessage("engine.retention_check_ms", engine.replace("\"retention_check_ms\": 500",
        "\"retention_check_ms\": 120000"));
    assertMessage("engine.memory_limit_bytes", engine.replace("67108864", "1048576"));
    assertMessage("engine.threads", engine.replace("\"threads\": 1", "\"threads\": 0"));
    assertMessage("jvm.heap_bytes", engine.replace("268435456", "1024"));
    assertMessage("unknown field", engine.replace("\"threads\"", "\"thread\""));
    // The history bound: absent or 0 keeps every statement's history; otherwise at least the
    // result's age, the sweep interval and the ticket lifetime (60 s + 0.5 s + the default hour
    // here; until 2026-12-06 without the interval, by which a release may follow the age).
    String history = engine.replace("\"lease_ms\"", "\"history_max_age_ms\": %d, \"lease_ms\"");
    assertEquals(new RetentionPolicy(Duration.ofMinutes(1), 1L << 20, Duration.ofMillis(500),
        Duration.ofMillis(3_660_500)), load(history.formatted(3_660_500)).engine().retention());
    assertEquals(Duration.ZERO, load(history.formatted(0)).engine().retention().historyAge());
    assertEquals(Duration.ZERO, load(engine).engine().retention().historyAge());
    assertMessage("engine.history_max_age_ms", history.formatted(3_660_499));
    assertMessage("engine.history_max_age_ms", history.formatted(-1));
  }

  @Test
  void errorsNameTheField() {
    assertMessage("callers[1].principal", VALID.formatted(caller("a", 10) + "," + caller("b", 10)));
    assertMessage("callers[0].publication", VALID.formatted(caller("a", 10)).replace("\"publication\": \"p\"", "\"publication\": \"q\""));
    assertMessage("publications[0].columns[0].type", VALID.formatted(caller("a", 10)).replace("INT64", "DECIMAL"));
    assertMessage("deployment.realm", VALID.formatted(caller("a", 10)).replace("\"realm\": 1,", ""));
    assertMessage("limits.admission_per_caller",
        VALID.formatted(caller("a", 10)).replace("\"state_dir\"", "\"limits\": {\"admission_per_caller\": 0}, \"state_dir\""));
    assertMessage("unknown field", VALID.formatted(caller("a", 10)).replace("\"state_dir\"", "\"stat_dir\": 1, \"state_dir\""));
    // Named by their path too: an unknown field, a value of the wrong type, a u64 past 2^63 - 1.
    String valid = VALID.formatted(caller("a", 10));
    assertMessage("unknown field limits.max_conections", valid.replace("\"state_dir\"",
        "\"limits\": {\"max_conections\": 1}, \"state_dir\""));
    assertMessage("unknown field callers[0].nme", valid.replace("\"requests\": 1",
        "\"requests\": 1, \"nme\": 1"));
    assertMessage("limits.max_connections: ", valid.replace("\"state_dir\"",
        "\"limits\": {\"max_connections\": \"abc\"}, \"state_dir\""));
    assertMessage("deployment.realm: ", valid.replace("\"realm\": 1",
        "\"realm\": 18446744073709551615"));
    assertMessage("invalid JSON at state_dir: ", valid.replace("\"state_dir\"",
        "\"state_dir\" \"x\","));
    // A value of another JSON type is refused, not converted: a fraction is not cut to an
    // integer, nor a string read as a number, nor a number as text or as a boolean.
    for (String[] wrong : new String[][] {
        {"\"state_dir\"", "\"limits\": {\"max_connections\": 1.9}, \"state_dir\"",
            "limits.max_connections"},
        {"\"ingress\": 1}", "\"ingress\": 1, \"ticket_ttl_ms\": 1.5}",
            "deployment.ticket_ttl_ms"},
        {"\"service\": 7", "\"service\": 7.0", "deployment.service"},
        {"\"realm\": 1", "\"realm\": \"5\"", "deployment.realm"},
        {"\"realm_name\": \"t\"", "\"realm_name\": 5", "deployment.realm_name"},
        {"\"nullable\": false", "\"nullable\": 0", "publications[0].columns[0].nullable"},
        {"\"nullable\": false", "\"nullable\": \"false\"",
            "publications[0].columns[0].nullable"}}) {
      assertTrue(valid.contains(wrong[0]), wrong[0]);
      assertMessage(wrong[2] + ": ", valid.replace(wrong[0], wrong[1]));
    }
    // DuckDB reads *, ? and [ in a path as a pattern: another file would be scanned.
    assertMessage("publications[0].files[0]: x[1].parquet (expected: a file path without *, ? or [)",
        valid.replace("\"x.parquet\"", "\"x[1].parquet\""));
    for (String field : new String[] {"role", "credential_epoch", "binding_revision"}) {
      assertMessage("callers[0]." + field, VALID.formatted(caller("a", 10))
          .replace("\"requests\": 1", "\"requests\": 1, \"" + field + "\": -1"));
    }
    // Values that validated once and then failed the start (a pool past a ForkJoinPool's most
    // threads) or every stream (a stall budget past what Duration.toNanos holds).
    for (String[] bad : new String[][] {
        {"max_live_streams", "40000"}, {"producer_threads", "32768"}, {"writer_threads", "32768"},
        {"admission_per_gateway", "2147483647"}, {"credit_stall_ms", "9223372036854775807"}}) {
      assertMessage("limits." + bad[0], VALID.formatted(caller("a", 10)).replace("\"state_dir\"",
          "\"limits\": {\"" + bad[0] + "\": " + bad[1] + "}, \"state_dir\""));
    }
    assertMessage("callers[1].credential_file",
        VALID.formatted(caller("a", 10) + "," + CALLER.formatted("b", "a", 11, "b")));
    // A dedicated key per principal: not another caller's, not the gateway's, not a credential.
    assertMessage("callers[1].principal_key_file",
        VALID.formatted(caller("a", 10) + "," + CALLER.formatted("b", "b", 11, "a")));
    assertMessage("callers[0].principal_key_file",
        VALID.formatted(CALLER.formatted("a", "a", 10, "ticket")));
    assertMessage("callers[0].principal_key_file", VALID.formatted(caller("a", 10))
        .replace("\"keys/a.key\"", "\"credentials/a\""));
  }

  @Test
  void plaintextBeyondLoopbackNeedsTheExplicitPrivateNetworkOption() throws Exception {
    String valid = VALID.formatted(caller("a", 10));
    for (String host : new String[] {"0.0.0.0", "10.1.2.3", "gateway.internal", "::"}) {
      String json = valid.replace("\"state_dir\"", "\"listen\": {\"host\": \"" + host + "\"}, \"state_dir\"");
      assertMessage("listen.private_network", json);
      String declared = json.replace("\"host\": \"" + host + "\"",
          "\"host\": \"" + host + "\", \"private_network\": true");
      assertEquals(host, load(declared).host());
    }
    for (String host : new String[] {"127.0.0.1", "127.0.0.2", "localhost", "::1"}) {
      assertTrue(ConfigLoader.loopback(host), host);
    }
  }

  @Test
  void journalIsSqliteByDefaultAndPostgresqlReadsItsPasswordFileOnce() throws Exception {
    String valid = VALID.formatted(caller("a", 10));
    assertEquals(ResolvedConfig.Journal.SQLITE, load(valid).journal());
    assertEquals(ResolvedConfig.Journal.SQLITE, load(valid.replace("\"state_dir\"",
        "\"journal\": {\"kind\": \"sqlite\"}, \"state_dir\"")).journal());

    Path pw = dir.resolve("state/journal.password");
    Files.createDirectories(pw.getParent());
    Files.writeString(pw, "s3cret-from-file\n");
    Files.setPosixFilePermissions(pw, java.nio.file.attribute.PosixFilePermissions.fromString(
        "rw-------"));
    String pg = valid.replace("\"state_dir\"", "\"journal\": {\"kind\": \"postgresql\","
        + " \"host\": \"db.internal\", \"port\": 5433, \"database\": \"journal\","
        + " \"user\": \"gw\", \"password_file\": \"journal.password\", \"pool_size\": 4,"
        + " \"lock_timeout_ms\": 2000}, \"state_dir\"");
    io.transit.flight.nativequery.postgres.PostgresSettings s = load(pg).journal().postgres();
    assertEquals("jdbc:postgresql://db.internal:5433/journal", s.jdbcUrl());
    assertEquals("gw", s.user());
    assertEquals("s3cret-from-file", s.password());
    assertEquals(4, s.poolSize());
    assertEquals(Duration.ofSeconds(2), s.lockTimeout());
    assertEquals(Duration.ofSeconds(5), s.connectionTimeout());
    assertEquals(Duration.ofSeconds(30), s.statementTimeout());
    assertEquals(Duration.ofMinutes(1), s.idleInTransactionTimeout());
    assertTrue(!s.toString().contains("s3cret"), "the password is never printed");

    assertMessage("journal.kind", pg.replace("postgresql", "mysql"));
    assertMessage("journal.kind", pg.replace("\"postgresql\"", "\"sqlite\""));
    assertMessage("journal.pool_size", pg.replace("\"pool_size\": 4", "\"pool_size\": 0"));
    assertMessage("journal.url", pg.replace("\"kind\": \"postgresql\",",
        "\"kind\": \"postgresql\", \"url\": \"jdbc:postgresql://h/d\","));
    // A URL parameter the journal sets itself would override it: refused, by name.
    assertMessage("journal.url: jdbc:postgresql://h/d?… sets socketTimeout (expected: no options,",
        pg.replace("\"kind\": \"postgresql\", \"host\": \"db.internal\", \"port\": 5433,"
            + " \"database\": \"journal\",", "\"kind\": \"postgresql\","
            + " \"url\": \"jdbc:postgresql://h/d?sslmode=require&socketTimeout=0\","));
    assertMessage("journal.url: jdbc:postgresql://h/d?… sets options", pg.replace(
        "\"kind\": \"postgresql\", \"host\": \"db.internal\", \"port\": 5433,"
            + " \"database\": \"journal\",", "\"kind\": \"postgresql\","
            + " \"url\": \"jdbc:postgresql://h/d?options=-c%20synchronous_commit%3Doff\","));
    assertEquals("jdbc:postgresql://h/d?sslmode=require", load(pg.replace(
        "\"kind\": \"postgresql\", \"host\": \"db.internal\", \"port\": 5433,"
            + " \"database\": \"journal\",", "\"kind\": \"postgresql\","
            + " \"url\": \"jdbc:postgresql://h/d?sslmode=require\",")).journal().postgres()
        .jdbcUrl());
    // A refusal names the URL without its parameters, which may hold a password.
    ConfigException secret = assertThrows(ConfigException.class, () -> load(pg.replace(
        "\"kind\": \"postgresql\",", "\"kind\": \"postgresql\","
            + " \"url\": \"jdbc:postgresql://u:pw1@h/d?sslpassword=pw2\",")));
    assertTrue(secret.getMessage().contains("jdbc:postgresql://h/d?"), secret.getMessage());
    assertTrue(!secret.getMessage().contains("pw1") && !secret.getMessage().contains("pw2"),
        secret.getMessage());
    // So is a URL refused for its scheme: a pasted libpq URI holds its password before the host.
    ConfigException pasted = assertThrows(ConfigException.class, () -> load(pg.replace(
        "\"kind\": \"postgresql\",", "\"kind\": \"postgresql\","
            + " \"url\": \"postgresql://transit:hunter2@db/transit_journal\",")));
    assertTrue(pasted.getMessage().contains("postgresql://db/transit_journal"),
        pasted.getMessage());
    assertFalse(pasted.getMessage().contains("hunter2"), pasted.getMessage());
    String shown = new io.transit.flight.nativequery.postgres.PostgresSettings(
        "jdbc:postgresql://h:5432/d?password=pw1", "gw", "pw", 1, Duration.ofSeconds(1),
        Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1)).toString();
    assertTrue(shown.startsWith("PostgresSettings[jdbcUrl=jdbc:postgresql://h:5432/d?…,")
        && !shown.contains("pw1"), shown);
    assertMessage("journal.password_file",
        pg.replace("\"journal.password\"", "\"missing.password\""));
    // A file named by mistake is neither read whole nor waited on: a FIFO blocked the load.
    Path fifo = dir.resolve("state/journal.fifo");
    Process mkfifo = new ProcessBuilder("mkfifo", "-m", "600", fifo.toString()).start();
    assertTrue(mkfifo.waitFor(30, TimeUnit.SECONDS), "mkfifo never ended");
    assertEquals(0, mkfifo.exitValue());
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertMessage(
        "journal.password_file: " + fifo + " (expected: a regular file)",
        pg.replace("\"journal.password\"", "\"journal.fifo\"")));
    Path big = Files.write(dir.resolve("state/journal.big"), new byte[1 << 20]);
    Files.setPosixFilePermissions(big,
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    assertMessage("journal.password_file: " + big + " (expected: at most 1024 bytes)",
        pg.replace("\"journal.password\"", "\"journal.big\""));
    Files.setPosixFilePermissions(pw, java.nio.file.attribute.PosixFilePermissions.fromString(
        "rw-r--r--"));
    assertMessage("journal.password_file", pg);
  }

  @Test
  void segmentsDefaultToTheStateDirectoryAndAnObjectStoreReadsItsPrivateKeyFiles() throws Exception {
    String valid = VALID.formatted(caller("a", 10));
    assertEquals(SegmentSettings.local(), load(valid).segments());
    Path keys = Files.createDirectories(dir.resolve("state/keys"));
    Path access = keys.resolve("s3-access");
    Path secret = keys.resolve("s3-secret");
    Files.writeString(access, "AKIDEXAMPLE\n");
    Files.writeString(secret, "wJalrXUtnFEMI/K7MDENG\n");
    Files.setPosixFilePermissions(access, PosixFilePermissions.fromString("rw-------"));
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("r--------"));
    String s3 = valid.replace("\"state_dir\"", "\"segments\": {\"kind\": \"s3\","
        + " \"endpoint\": \"http://127.0.0.1:7070\", \"bucket\": \"transit-segments\","
        + " \"access_key_file\": \"keys/s3-access\", \"secret_key_file\": \"keys/s3-secret\"},"
        + " \"state_dir\"");
    assertEquals(new SegmentSettings.ObjectStore(URI.create("http://127.0.0.1:7070"), "us-east-1",
        "transit-segments", "segments/", "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG",
        Duration.ofSeconds(2), Duration.ofSeconds(30), 50, Duration.ofHours(1)),
        load(s3).segments());
    assertMessage("segments.endpoint", s3.replace("127.0.0.1:7070", "10.0.0.5:7070"));
    assertEquals("10.0.0.5", ((SegmentSettings.ObjectStore) load(s3.replace("127.0.0.1:7070",
        "10.0.0.5:7070").replace("\"kind\": \"s3\",", "\"kind\": \"s3\", \"private_network\": true,")
    ).segments()).endpoint().getHost());
    assertMessage("segments.endpoint", s3.replace("http://127.0.0.1:7070", "ftp://127.0.0.1"));
    ConfigException withKeys = assertThrows(ConfigException.class, () -> load(s3.replace(
        "http://127.0.0.1:7070", "https://AKIAEXAMPLE:wJalrSECRET@s3.example:443/?X-Amz-Credential=k")));
    assertTrue(withKeys.getMessage().contains("segments.endpoint: https://s3.example:443/?…"),
        withKeys.getMessage());
    assertFalse(withKeys.getMessage().contains("SECRET") || withKeys.getMessage().contains("AKIA")
        || withKeys.getMessage().contains("Amz"), withKeys.getMessage());
    assertMessage("segments.bucket", s3.replace("transit-segments", "Bad_Bucket"));
    assertMessage("segments.prefix", s3.replace("\"bucket\"", "\"prefix\": \"/abs\", \"bucket\""));
    assertMessage("segments.kind", s3.replace("\"s3\"", "\"nfs\""));
    assertMessage("segments: object-store fields", s3.replace("\"s3\"", "\"local\""));
    assertMessage("segments.secret_key_file", s3.replace("keys/s3-secret", "keys/absent"));
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-r--r--"));
    ConfigException open = assertThrows(ConfigException.class, () -> load(s3));
    assertTrue(open.getMessage().contains("segments.secret_key_file")
        && open.getMessage().contains("0600"), open.getMessage());
    assertTrue(!open.getMessage().contains("wJalrXUtnFEMI"), "never the secret itself");
  }

  private void assertMessage(String expected, String json) {
    ConfigException e = assertThrows(ConfigException.class, () -> load(json));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
