package io.transit.flight.server.auth;

import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.server.config.ResolvedConfig;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Everything a reload changes, as one immutable value: the configuration, the credentials (each
 * mapped to its caller's binding) and the native rights built from the same mappings. A reload
 * builds a whole new snapshot and {@link Authorization#install installs} it with one reference
 * swap, so no call can see credentials of one configuration with the ticket scope of another.
 *
 * <p>Tokens are never stored: the map is keyed by their SHA-256, so the snapshot holds no secret
 * and a timing difference in the lookup reveals nothing about one. Immutable; any thread.
 */
public final class AuthSnapshot {
  private final ResolvedConfig config;
  private final Map<String, CallerBinding> byDigest;
  private final Map<String, CallerBinding> byName;
  private final List<PrincipalRights> rights;

  /** {@code byToken} maps each credential token to its binding; it is not kept. */
  public AuthSnapshot(ResolvedConfig config, Map<String, CallerBinding> byToken,
      List<PrincipalRights> rights) {
    this.config = config;
    Map<String, CallerBinding> digests = new HashMap<>();
    Map<String, CallerBinding> names = new HashMap<>();
    byToken.forEach((token, binding) -> {
      digests.put(digest(token), binding);
      names.put(binding.name(), binding);
    });
    this.byDigest = Map.copyOf(digests);
    this.byName = Map.copyOf(names);
    this.rights = List.copyOf(rights);
  }

  public ResolvedConfig config() {
    return config;
  }

  /** The native rights this snapshot grants; the engine receives them before the swap. */
  public List<PrincipalRights> rights() {
    return rights;
  }

  /** The binding a Bearer token authenticates, if any. */
  public Optional<CallerBinding> lookup(String token) {
    return Optional.ofNullable(byDigest.get(digest(token)));
  }

  /** Every caller's binding (the rights document a reload records is built from them). */
  public java.util.Collection<CallerBinding> bindings() {
    return byName.values();
  }

  /** The binding of a caller by name, used to re-check authorization mid-stream. */
  public Optional<CallerBinding> current(String callerName) {
    return Optional.ofNullable(byName.get(callerName));
  }

  private static String digest(String token) {
    return HexFormat.of().formatHex(credentialDigest(token));
  }

  /** A credential's identity in a binding: the SHA-256 of its token. */
  public static byte[] credentialDigest(String token) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
