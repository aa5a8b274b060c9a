package io.transit.flight.admission;

import io.transit.flight.crypto.Ed25519;
import java.util.Objects;

/**
 * The admission facts of one authenticated caller, resolved from the configured binding: the
 * dedicated native principal and its signing key, the selected role (if any), the native
 * credential epoch, and the gateway service id that is the proof's intended recipient. All
 * integers are unsigned 64-bit values held in {@code long}s.
 *
 * <p>Immutable. {@link #toString()} never prints key material.
 */
public record AdmissionSubject(
    long principal,
    Ed25519.KeyPair key,
    boolean hasRole,
    long role,
    long credentialEpoch,
    long serviceId) {

  public AdmissionSubject {
    Objects.requireNonNull(key, "key");
    if (!hasRole && role != 0) {
      // One encoding per meaning: an absent role is always role 0, as in FTK1 scope fields.
      throw new IllegalArgumentException(
          "role: " + Long.toUnsignedString(role) + " (expected: 0 when no role is selected)");
    }
  }

  /** A binding without a selected role. */
  public static AdmissionSubject withoutRole(
      long principal, Ed25519.KeyPair key, long credentialEpoch, long serviceId) {
    return new AdmissionSubject(principal, key, false, 0, credentialEpoch, serviceId);
  }

  @Override
  public String toString() {
    return "AdmissionSubject[principal=" + Long.toUnsignedString(principal)
        + ", role=" + (hasRole ? Long.toUnsignedString(role) : "none")
        + ", credentialEpoch=" + Long.toUnsignedString(credentialEpoch)
        + ", serviceId=" + Long.toUnsignedString(serviceId) + "]";
  }
}
