package io.transit.flight.admission;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.PrincipalProof;

/**
 * The signed form of a {@link PrincipalProof}: the proof that the original principal asked for
 * exactly these query bytes, under this role and credential epoch, for this recipient.
 *
 * <p>Encoding (normative; the native engine verifies against the same bytes): a fresh {@code
 * PrincipalProof} holding only fields 1..6 of the given proof (principal, has_role, role,
 * credential_epoch, query_sha256, recipient) — signature cleared and unknown fields dropped —
 * serialized with protobuf deterministic serialization ({@link DeterministicProto}). The signed
 * message is {@code Digests.domainSha256("transit.flight.proof.v1", encoding)}, i.e. SHA-256 of
 * the ASCII domain, one 0x00 byte, then the encoding; the signature is Ed25519 (64 bytes,
 * deterministic) by the principal's key over those 32 bytes.
 *
 * <p>Stateless and thread-safe.
 */
public final class ProofEncoding {
  /** The signature domain of principal proofs. */
  public static final String DOMAIN = "transit.flight.proof.v1";

  private ProofEncoding() {}

  /** Deterministic encoding of proof fields 1..6 (signature and unknown fields excluded). */
  public static byte[] encode(PrincipalProof proof) {
    PrincipalProof fields =
        PrincipalProof.newBuilder()
            .setPrincipal(proof.getPrincipal())
            .setHasRole(proof.getHasRole())
            .setRole(proof.getRole())
            .setCredentialEpoch(proof.getCredentialEpoch())
            .setQuerySha256(proof.getQuerySha256())
            .setRecipient(proof.getRecipient())
            .build();
    return DeterministicProto.bytes(fields);
  }

  /** The 32-byte message the proof signature covers. */
  public static byte[] signedMessage(PrincipalProof proof) {
    return Digests.domainSha256(DOMAIN, encode(proof));
  }

  /** {@code proof} with its signature field set by {@code key} (any previous signature replaced). */
  public static PrincipalProof sign(PrincipalProof proof, Ed25519.KeyPair key) {
    byte[] signature = key.sign(signedMessage(proof));
    return proof.toBuilder()
        .setSignature(ByteString.copyFrom(signature))
        .build();
  }

  /** True when the proof carries a canonical Ed25519 signature by {@code key} over its fields. */
  public static boolean verify(PrincipalProof proof, Ed25519.PublicKey key) {
    return key.verify(signedMessage(proof), proof.getSignature().toByteArray());
  }
}
