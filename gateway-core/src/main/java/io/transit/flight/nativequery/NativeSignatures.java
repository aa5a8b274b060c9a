package io.transit.flight.nativequery;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The signed encodings shared by the admission side (which signs) and the native engine (which
 * verifies): native commands, the principal proof inside a request bundle, and the declaration
 * fingerprint. Both sides must use these helpers so the bytes they sign and check are the same.
 *
 * <p>Stateless and thread-safe.
 */
public final class NativeSignatures {
  public static final String COMMAND_DOMAIN = "transit.native.command.v1";
  public static final String PROOF_DOMAIN = "transit.flight.proof.v1";

  private NativeSignatures() {}

  /** Serializes {@code command} deterministically and signs it with the principal's key. */
  public static SignedCommand signCommand(NativeCommand command, Ed25519.KeyPair key) {
    byte[] bytes = command.toByteArray();
    byte[] signature = key.sign(Digests.domainSha256(COMMAND_DOMAIN, bytes));
    return SignedCommand.newBuilder()
        .setCommand(com.google.protobuf.ByteString.copyFrom(bytes))
        .setSignature(com.google.protobuf.ByteString.copyFrom(signature))
        .build();
  }

  /** True when the signature covers exactly these command bytes under {@code key}. */
  public static boolean verifyCommand(SignedCommand signed, Ed25519.PublicKey key) {
    byte[] message = Digests.domainSha256(COMMAND_DOMAIN, signed.getCommand().toByteArray());
    return key.verify(message, signed.getSignature().toByteArray());
  }

  /**
   * The canonical encoding of proof fields 1..6, little endian: principal u64, has_role u8, role
   * u64, credential_epoch u64, query_sha256 length u32 then its bytes, recipient u64. A fixed
   * layout rather than protobuf bytes so the signed message never depends on a serializer.
   */
  public static byte[] encodeProofFields(PrincipalProof proof) {
    byte[] query = proof.getQuerySha256().toByteArray();
    ByteBuffer b = ByteBuffer.allocate(8 + 1 + 8 + 8 + 4 + query.length + 8);
    b.order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(proof.getPrincipal());
    b.put((byte) (proof.getHasRole() ? 1 : 0));
    b.putLong(proof.getRole());
    b.putLong(proof.getCredentialEpoch());
    b.putInt(query.length);
    b.put(query);
    b.putLong(proof.getRecipient());
    return b.array();
  }

  /** The proof with its signature (field 7) set from fields 1..6; any old signature is replaced. */
  public static PrincipalProof signProof(PrincipalProof proof, Ed25519.KeyPair key) {
    byte[] signature = key.sign(Digests.domainSha256(PROOF_DOMAIN, encodeProofFields(proof)));
    return proof.toBuilder()
        .setSignature(com.google.protobuf.ByteString.copyFrom(signature))
        .build();
  }

  public static boolean verifyProof(PrincipalProof proof, Ed25519.PublicKey key) {
    byte[] message = Digests.domainSha256(PROOF_DOMAIN, encodeProofFields(proof));
    return key.verify(message, proof.getSignature().toByteArray());
  }

  /** SHA-256 of the deterministic declaration bytes: the Table source declaration fingerprint. */
  public static byte[] declarationSha256(TableDeclaration declaration) {
    return Digests.sha256(declaration.toByteArray());
  }
}
