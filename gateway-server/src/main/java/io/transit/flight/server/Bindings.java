package io.transit.flight.server;

import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.embedded.DuckSettings;
import io.transit.flight.nativequery.embedded.EngineOptions;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns caller mappings into authenticated bindings and native rights, loading (or, on first
 * run, generating) each caller's credential and principal key from the state directory. A missing
 * principal key is written only once the journal's rights show its principal unused ({@link
 * io.transit.flight.server.auth.PrincipalKeys}): at start {@link #build} generates it in memory and
 * {@link #keep} writes it after the check; a reload checks before it builds.
 *
 * <p>Threads: {@link #build} runs at start; {@link #next} on the signal thread. Both only
 * build: the caller installs the result (one swap), so a failure leaves the running snapshot in
 * force.
 */
public final class Bindings {
  private final StateDirectory state;

  Bindings(StateDirectory state) {
    this.state = state;
  }

  /**
   * A snapshot and the principal keys its callers' files held when it was built, by caller
   * name: a caller missing there has a key generated in memory, which {@link #keep} writes.
   */
  record Built(AuthSnapshot snapshot, Map<String, Ed25519.KeyPair> onFile) {}

  /** The check of the principal keys against the journal's rights a reload runs first. */
  @FunctionalInterface
  interface KeyCheck {
    void check(ResolvedConfig cfg, Map<String, Ed25519.KeyPair> onFile) throws ConfigException;
  }

  /**
   * The snapshot of {@code cfg}; a missing principal key is generated in memory, not written
   * ({@link #keep}), a missing credential generated and written.
   */
  Built build(ResolvedConfig cfg) throws ConfigException {
    return build(cfg, keysOnFile(cfg));
  }

  /** Each caller's principal key its file holds, by caller name; none for a missing file. */
  private static Map<String, Ed25519.KeyPair> keysOnFile(ResolvedConfig cfg)
      throws ConfigException {
    Map<String, Ed25519.KeyPair> onFile = new HashMap<>();
    for (ResolvedConfig.Caller c : cfg.callers()) {
      Optional<Ed25519.KeyPair> key = StateDirectory.existingKey(c.principalKeyFile());
      if (key.isPresent()) {
        onFile.put(c.name(), key.get());
      }
    }
    return Map.copyOf(onFile);
  }

  // The keys checked against the journal are the ones built into the snapshot: a file removed
  // between the check and the build is not generated again.
  private Built build(ResolvedConfig cfg, Map<String, Ed25519.KeyPair> onFile)
      throws ConfigException {
    Map<String, CallerBinding> byToken = new LinkedHashMap<>();
    Map<String, String> tokensByCaller = new HashMap<>();
    List<PrincipalRights> rights = new ArrayList<>();
    for (ResolvedConfig.Caller c : cfg.callers()) {
      String token = state.loadOrCreateCredential(c.credentialFile());
      Ed25519.KeyPair key = onFile.containsKey(c.name()) ? onFile.get(c.name()) : state.newKey();
      tokensByCaller.put(c.name(), token);
      ResolvedConfig.Publication pub = cfg.publications().get(c.publication());
      CallerBinding binding = new CallerBinding(c.name(), c.principal(), key, c.hasRole(), c.role(),
          c.credentialEpoch(), AuthSnapshot.credentialDigest(token), c.bindingRevision(),
          c.requests(), pub.name(), pub.declaration(), DeclarationFingerprint.of(pub.declaration()),
          c.canSend(), c.canInspect(), c.canRead());
      byToken.put(token, binding);
      rights.add(binding.nativeRights());
    }
    StateDirectory.checkDistinct(tokensByCaller);
    return new Built(new AuthSnapshot(cfg, byToken, rights), onFile);
  }

  /**
   * Writes the principal keys {@link #build} generated, once the journal's rights allowed them
   * ({@link io.transit.flight.server.auth.PrincipalKeys#check}).
   */
  void keep(Built b) throws ConfigException {
    AuthSnapshot s = b.snapshot();
    for (ResolvedConfig.Caller c : s.config().callers()) {
      if (!b.onFile().containsKey(c.name())) {
        state.keepKey(c.principalKeyFile(), s.current(c.name()).orElseThrow().principalKey());
      }
    }
  }

  /**
   * What the gateway's start and {@link #build} would refuse in the secrets that exist, creating
   * none ({@code check-config}; a missing key or credential is generated at run, except a
   * principal key the journal's rights require, which needs the journal): the ticket and
   * inspection keys, each caller's credential and principal key (mode, format), and two callers
   * with equal credentials. Main thread.
   */
  public static void checkExistingSecrets(ResolvedConfig cfg, StateDirectory state)
      throws ConfigException {
    StateDirectory.existingKey(state.ticketKeyFile());
    StateDirectory.existingKey(state.inspectionKeyFile());
    Map<String, String> tokensByCaller = new HashMap<>();
    for (ResolvedConfig.Caller c : cfg.callers()) {
      Optional<String> token = StateDirectory.existingCredential(c.credentialFile());
      if (token.isPresent()) {
        tokensByCaller.put(c.name(), token.get());
      }
      StateDirectory.existingKey(c.principalKeyFile());
    }
    StateDirectory.checkDistinct(tokensByCaller);
  }

  /**
   * The snapshot a reload installs: refuses a reload that would change what is fixed at start
   * (loaded data, listener, ticket definition, sizing, journal and object store) or whose
   * existing secrets would be refused, or whose principal keys {@code journal} refuses (a key
   * missing or replaced for a principal the journal's rights name), creating nothing then;
   * otherwise builds the whole next snapshot (generating a new caller's missing credential and
   * key) and changes nothing else.
   * Callers,
   * their rights, bindings and publication mappings, {@code deployment.ingress} and
   * {@code deployment.ticket_ttl_ms} take effect live.
   */
  AuthSnapshot next(ResolvedConfig current, ResolvedConfig next, KeyCheck journal)
      throws ConfigException {
    if (!current.publications().equals(next.publications())) {
      throw new ConfigException("publications changed: a restart is required to load new data");
    }
    if (!current.stateDir().equals(next.stateDir()) || current.port() != next.port()
        || !current.host().equals(next.host()) || !current.transport().equals(next.transport())) {
      throw new ConfigException("state_dir or listen changed: a restart is required");
    }
    // The Transit definition (tickets) and the engine's proof recipient are built from these at
    // start; taking them live would leave the scope and the definition disagreeing.
    if (current.realm() != next.realm() || !current.realmName().equals(next.realmName())
        || current.service() != next.service()) {
      throw new ConfigException(
          "deployment.realm, realm_name or service changed: a restart is required");
    }
    // Allocators, pools, listener bounds and deadlines are sized at start; a partial live change
    // would be worse than none.
    // The object store's client (endpoint, bucket, keys) is built with the engine at start.
    if (!current.limits().equals(next.limits()) || !current.engine().equals(next.engine())
        || !current.journal().equals(next.journal())
        || !current.segments().equals(next.segments())) {
      throw new ConfigException(
          "limits, engine, journal, segments or jvm changed: a restart is required");
    }
    // Every secret that exists is checked before a missing one is generated: a file refused
    // after a new caller's credential was written would leave that credential behind (until
    // 2026-12-07), for the next reload or start to use.
    checkExistingSecrets(next, state);
    Map<String, Ed25519.KeyPair> onFile = keysOnFile(next);
    journal.check(next, onFile);
    Built b = build(next, onFile);
    keep(b);
    return b.snapshot();
  }

  public static List<Publication> publications(ResolvedConfig cfg) {
    List<Publication> out = new ArrayList<>();
    for (ResolvedConfig.Publication p : cfg.publications().values()) {
      out.add(new Publication(p.declaration(), p.files(), p.format()));
    }
    return out;
  }

  /** The engine checks every request proof names this gateway service as its recipient. */
  public static EngineOptions engineOptions(ResolvedConfig cfg) {
    ResolvedConfig.Engine e = cfg.engine();
    return EngineOptions.defaults()
        .withRecipient(cfg.service())
        .withMemoryLimitBytes(e.allocatorBytes())
        .withDuck(new DuckSettings(e.memoryLimitBytes(), e.threads(), e.tempDir()))
        .withRetention(e.retention())
        .withSegments(cfg.segments())
        .withLease(e.lease().lease(), e.lease().scan());
  }
}
