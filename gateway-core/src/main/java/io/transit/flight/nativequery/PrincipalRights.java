package io.transit.flight.nativequery;

import io.transit.flight.crypto.Ed25519;
import java.util.Objects;
import java.util.Set;

/**
 * One native principal's current registration and rights, as the server's private config grants
 * them. Swapped atomically as a whole set on reload; the engine consults the current set on every
 * command and every read.
 *
 * @param principal the native principal id
 * @param key the public key its commands and proofs are signed with
 * @param credentialEpoch the current credential epoch; a proof with another epoch is rejected
 * @param canSend whether the principal may send commands (admit queries)
 * @param canInspect whether it may read statuses and manifests of its own results
 * @param readableSources the sources whose entries (result segments, new queries) it may read
 */
public record PrincipalRights(
    long principal,
    Ed25519.PublicKey key,
    long credentialEpoch,
    boolean canSend,
    boolean canInspect,
    Set<Long> readableSources) {
  public PrincipalRights {
    Objects.requireNonNull(key, "key");
    readableSources = Set.copyOf(readableSources);
  }

  public boolean mayRead(long source) {
    return readableSources.contains(source);
  }
}
