package io.transit.flight.server;

import io.transit.flight.nativequery.NativeQueryAdmin;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ConfigLoader;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.TransitDefinition;
import io.transit.flight.ticket.VerifiedTicket;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;

/**
 * Real configurations and authorization snapshots for server tests: a one-publication JSON
 * configuration loaded by the real {@link ConfigLoader}, credentials and keys in a real {@link
 * StateDirectory}, snapshots built by the real {@link Bindings}.
 */
public final class TestBindings {
  private static final String CONFIG = """
      {
        "state_dir": "state",
        "deployment": {"realm": 1, "realm_name": "t", "service": 7, "ingress": %d,
          "ticket_ttl_ms": 60000},
        "publications": [{"name": "p", "catalog": "c", "schema": "s", "table": "t", "owner": "o",
          "object_id": 5, "source": 9, "metadata_ref": "m", "format": "parquet",
          "files": ["x.parquet"],
          "columns": [{"name": "a", "type": "INT64", "nullable": false}]}],
        "callers": [%s],
        "limits": {%s}
      }""";
  private static final String CALLER = """
      {"name": "%s", "credential_file": "credentials/%s", "principal": %d,
       "principal_key_file": "keys/%s.key", "requests": 1, "publication": "p",
       "rights": {"send": %b, "inspect": %b, "read": %b}}""";

  private final Path dir;
  private final StateDirectory state;
  private final Bindings bindings;

  /** Configurations and state live under {@code dir}, a fresh directory. */
  public TestBindings(Path dir) throws ConfigException {
    this.dir = dir;
    this.state = new StateDirectory(dir.resolve("state"), new SecureRandom());
    state.prepare();
    this.bindings = new Bindings(state);
  }

  /** One caller entry of {@link #config}. */
  public static String caller(String name, long principal, boolean read) {
    return caller(name, principal, true, true, read);
  }

  /** One caller entry of {@link #config} with each of its three rights given. */
  public static String caller(String name, long principal, boolean send, boolean inspect,
      boolean read) {
    return CALLER.formatted(name, name, principal, name, send, inspect, read);
  }

  /** The configuration with this ingress and these callers, loaded and validated. */
  public ResolvedConfig config(long ingress, String... callers) throws Exception {
    return configWithLimits("", ingress, callers);
  }

  /**
   * As {@link #config} with a {@code limits} section ({@code limits}: its JSON members, e.g.
   * {@code "rows_per_segment": 100}), validated by the loader as the daemon's would be.
   */
  public ResolvedConfig configWithLimits(String limits, long ingress, String... callers)
      throws Exception {
    Path f = dir.resolve("gateway.json");
    Files.writeString(f, CONFIG.formatted(ingress, String.join(",", callers), limits));
    return new ConfigLoader().load(f);
  }

  /**
   * Writes the configuration's one data file, {@code x.parquet}, where the engine reads it:
   * column {@code a} holds 0 .. {@code rows}-1 in file order.
   */
  public void writeData(int rows) throws SQLException {
    Path file = dir.resolve("state").resolve("x.parquet");
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      s.execute("COPY (SELECT range::BIGINT AS a FROM range(" + rows + ")) TO '" + file
          + "' (FORMAT parquet)");
    }
  }

  /**
   * The snapshot the daemon builds at start, its generated principal keys written (as the start
   * writes them once the journal's rights allowed them; these tests record no conflicting rights).
   */
  public AuthSnapshot snapshot(ResolvedConfig cfg) throws ConfigException {
    Bindings.Built b = bindings.build(cfg);
    bindings.keep(b);
    return b.snapshot();
  }

  /**
   * The snapshot a reload from {@code current} to {@code next} installs, its principal keys not
   * checked against a journal.
   */
  public AuthSnapshot next(ResolvedConfig current, ResolvedConfig next) throws ConfigException {
    return bindings.next(current, next, (cfg, onFile) -> { });
  }

  /** The caller's Bearer token, as the state directory holds it. */
  public String token(String name) throws ConfigException {
    return state.loadOrCreateCredential(dir.resolve("state").resolve("credentials").resolve(name));
  }

  /**
   * The parts one served call meets, built as the daemon builds them: the authorization over
   * {@code snapshot} with {@code engine}'s journal holding the rights, the ticket service of
   * {@code cfg}'s definition, and {@code callerName} authenticated by its Bearer token.
   */
  public Served serve(ResolvedConfig cfg, AuthSnapshot snapshot, String callerName,
      NativeQueryAdmin engine) throws ConfigException {
    Authorization authorization = new Authorization(snapshot, engine.rightsLedger(),
        engine::updateRights, Clock.systemUTC());
    TicketService tickets = new TicketService(ticketKey(),
        TransitDefinition.of(cfg.realmName(), cfg.realm(), cfg.service()), Clock.systemUTC());
    return new Served(authorization, tickets,
        authorization.authenticate(token(callerName)).orElseThrow());
  }

  /** See {@link #serve}. */
  public record Served(Authorization authorization, TicketService tickets, CallerBinding caller) {
    /** {@code ticket} verified against the caller's current grant, as DoGet's entry does. */
    public VerifiedTicket verify(byte[] ticket) {
      return tickets.verify(ticket, authorization.current(caller).scope(),
          caller.declarationFingerprint());
    }
  }

  /** The ticket signing key the daemon would use. */
  public io.transit.flight.crypto.Ed25519.KeyPair ticketKey() throws ConfigException {
    return state.loadOrCreateKey(state.ticketKeyFile());
  }
}
