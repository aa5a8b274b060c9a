package io.transit.flight.server.auth;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.proto.TableDeclaration;
import java.util.Set;

/**
 * What an authenticated Bearer credential maps to: the dedicated native principal and its key,
 * the optional selected role, the credential (its SHA-256, never the token) with its epoch, the
 * binding revision, and the one published Table with its source and request scope. Immutable; a
 * reload builds new bindings.
 */
public record CallerBinding(
    String name,
    long principal,
    Ed25519.KeyPair principalKey,
    boolean hasRole,
    long role,
    long credentialEpoch,
    byte[] credentialDigest,
    long bindingRevision,
    long requests,
    String publication,
    TableDeclaration table,
    byte[] declarationFingerprint,
    boolean canSend,
    boolean canInspect,
    boolean canRead) {

  public long source() {
    return table.getSource();
  }

  public long resource() {
    return table.getObjectId();
  }

  /** This binding with the three rights given (the journal's current rights, say). */
  public CallerBinding withRights(boolean send, boolean inspect, boolean read) {
    return new CallerBinding(name, principal, principalKey, hasRole, role, credentialEpoch,
        credentialDigest, bindingRevision, requests, publication, table, declarationFingerprint,
        send, inspect, read);
  }

  /**
   * Whether {@code other} was authenticated by the same credential: the same token and credential
   * epoch. A replaced credential file changes the first, a rotation's epoch bump the second.
   */
  public boolean sameCredential(CallerBinding other) {
    return credentialEpoch == other.credentialEpoch
        && java.security.MessageDigest.isEqual(credentialDigest, other.credentialDigest);
  }

  /** The native principal's registration and rights this binding gives the engine. */
  public PrincipalRights nativeRights() {
    return new PrincipalRights(principal, principalKey.publicKey(), credentialEpoch, canSend,
        canInspect, canRead ? Set.of(source()) : Set.of());
  }

  @Override
  public String toString() {
    // Never print key material.
    return "CallerBinding[" + name + ", principal=" + Long.toUnsignedString(principal) + "]";
  }
}
