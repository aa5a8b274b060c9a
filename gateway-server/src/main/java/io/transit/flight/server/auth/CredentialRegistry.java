package io.transit.flight.server.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Maps Bearer credentials to {@link CallerBinding}s. Tokens are never stored: lookups go through
 * their SHA-256, so the map holds no secret and a timing difference reveals nothing about one.
 *
 * <p>Thread-safety: {@link #lookup} runs on gRPC threads for every RPC; {@link #replace} runs on
 * the reload thread. The bindings map is immutable and swapped through an AtomicReference, so a
 * call sees either the old mapping or the new one, never a mix.
 */
public final class CredentialRegistry {
  private final AtomicReference<Map<String, CallerBinding>> byDigest =
      new AtomicReference<>(Map.of());

  /** Installs a new mapping (token → binding) atomically. */
  public void replace(Map<String, CallerBinding> byToken) {
    Map<String, CallerBinding> next = new HashMap<>();
    byToken.forEach((token, binding) -> next.put(digest(token), binding));
    byDigest.set(Map.copyOf(next));
  }

  public Optional<CallerBinding> lookup(String token) {
    return Optional.ofNullable(byDigest.get().get(digest(token)));
  }

  /** The current binding of a caller by name (used to re-check authorization mid-stream). */
  public Optional<CallerBinding> current(String callerName) {
    for (CallerBinding b : byDigest.get().values()) {
      if (b.name().equals(callerName)) {
        return Optional.of(b);
      }
    }
    return Optional.empty();
  }

  private static String digest(String token) {
    try {
      return HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
