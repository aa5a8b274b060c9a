package io.transit.flight.nativequery;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;

/**
 * The native signature contract, the one definition both sides use: admission signs with it and
 * the native engine verifies with it, so the signed bytes cannot drift apart. Pinned by the golden
 * vectors in {@code docs/vectors/admission.json}.
 *
 * <p><b>Commands.</b> A {@link NativeCommand} is serialized deterministically ({@link
 * DeterministicProto}) into {@code SignedCommand.command}; the signature is Ed25519 by the
 * principal's key over {@code Digests.domainSha256("transit.native.command.v1", commandBytes)}.
 * Verification covers the received bytes as they are, never a re-serialization.
 *
 * <p><b>Principal proof</b> (normative). The encoding is a fresh {@link PrincipalProof} holding
 * only fields 1..6 of the given proof (principal, has_role, role, credential_epoch,
 * query_sha256, recipient) — signature cleared, unknown fields dropped — serialized
 * deterministically. The signature (field 7) is Ed25519 by the principal's key over {@code
 * Digests.domainSha256("transit.flight.proof.v1", encoding)}.
 *
 * <p>Stateless and thread-safe.
 */
public final class NativeSignatures {
  /** The signature domain of native commands. */
  public static final String COMMAND_DOMAIN = "transit.native.command.v1";
  /** The signature domain of principal proofs. */
  public static final String PROOF_DOMAIN = "transit.flight.proof.v1";

  private NativeSignatures() {}

  /** The 32-byte message a command signature covers, for {@code commandBytes} as sent. */
  public static byte[] commandMessage(byte[] commandBytes) {
    return Digests.domainSha256(COMMAND_DOMAIN, commandBytes);
  }

  /** Serializes {@code command} deterministically and signs it with the principal's key. */
  public static SignedCommand signCommand(NativeCommand command, Ed25519.KeyPair key) {
    byte[] bytes = DeterministicProto.bytes(command);
    return SignedCommand.newBuilder()
        .setCommand(ByteString.copyFrom(bytes))
        .setSignature(ByteString.copyFrom(key.sign(commandMessage(bytes))))
        .build();
  }

  /** True when the signature covers exactly these command bytes under {@code key}. */
  public static boolean verifyCommand(SignedCommand signed, Ed25519.PublicKey key) {
    return key.verify(
        commandMessage(signed.getCommand().toByteArray()), signed.getSignature().toByteArray());
  }

  /** The deterministic encoding of proof fields 1..6 (signature and unknown fields excluded). */
  public static byte[] encodeProofFields(PrincipalProof proof) {
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

  /** The 32-byte message a proof signature covers. */
  public static byte[] proofMessage(PrincipalProof proof) {
    return Digests.domainSha256(PROOF_DOMAIN, encodeProofFields(proof));
  }

  /** The proof with its signature (field 7) set from fields 1..6; any old signature is replaced. */
  public static PrincipalProof signProof(PrincipalProof proof, Ed25519.KeyPair key) {
    return proof.toBuilder()
        .setSignature(ByteString.copyFrom(key.sign(proofMessage(proof))))
        .build();
  }

  /** True when the proof carries a canonical Ed25519 signature by {@code key} over its fields. */
  public static boolean verifyProof(PrincipalProof proof, Ed25519.PublicKey key) {
    return key.verify(proofMessage(proof), proof.getSignature().toByteArray());
  }
}
