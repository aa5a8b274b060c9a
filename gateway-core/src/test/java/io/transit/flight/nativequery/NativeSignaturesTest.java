package io.transit.flight.nativequery;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The native signature contract: proof encoding bytes, proof and command signatures. */
class NativeSignaturesTest {
  private static final Ed25519.KeyPair KEY = Ed25519.fromSeed(filled(3));
  private static final Ed25519.KeyPair OTHER = Ed25519.fromSeed(filled(4));

  private static byte[] filled(int b) {
    byte[] s = new byte[32];
    Arrays.fill(s, (byte) b);
    return s;
  }

  private static PrincipalProof proof() {
    return PrincipalProof.newBuilder()
        .setPrincipal(0x0102030405060708L)
        .setHasRole(true)
        .setRole(9)
        .setCredentialEpoch(2)
        .setQuerySha256(ByteString.copyFrom(Digests.sha256(new byte[] {1})))
        .setRecipient(-1L)
        .build();
  }

  @Test
  void proofEncodingIsDeterministicProtobufOfFieldsOneToSix() {
    PrincipalProof small =
        PrincipalProof.newBuilder().setPrincipal(1).setRecipient(2).setCredentialEpoch(3).build();
    // Field 1 varint 1, field 4 varint 3, field 6 varint 2; defaults omitted, number order.
    assertEquals("0801200330" + "02", Digests.hex(NativeSignatures.encodeProofFields(small)));
    byte[] e = NativeSignatures.encodeProofFields(proof());
    // Field 1 (principal 0x0102030405060708 as a varint), then has_role true, role 9, epoch 2.
    assertEquals("08888e98a8c0e0808101" + "1001" + "1809" + "2002",
        HexFormat.of().formatHex(e, 0, 16));
    // Field 5: 32 bytes; field 6: recipient 2^64-1 as a ten-byte varint.
    assertEquals("2a20", HexFormat.of().formatHex(e, 16, 18));
    assertEquals("30ffffffffffffffffff01", HexFormat.of().formatHex(e, 50, e.length));
    assertArrayEquals(DeterministicProto.bytes(proof()), e);
  }

  @Test
  void proofEncodingExcludesSignatureAndUnknownFields() {
    PrincipalProof noisy =
        proof().toBuilder()
            .setSignature(ByteString.copyFrom(new byte[64]))
            .setUnknownFields(
                UnknownFieldSet.newBuilder()
                    .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(5).build())
                    .build())
            .build();
    assertArrayEquals(
        NativeSignatures.encodeProofFields(proof()), NativeSignatures.encodeProofFields(noisy));
    assertArrayEquals(
        Digests.domainSha256("transit.flight.proof.v1", NativeSignatures.encodeProofFields(noisy)),
        NativeSignatures.proofMessage(noisy));
  }

  @Test
  void signedProofVerifiesOnlyUnchangedAndUnderItsKey() {
    PrincipalProof signed = NativeSignatures.signProof(proof(), KEY);
    assertTrue(NativeSignatures.verifyProof(signed, KEY.publicKey()));
    assertArrayEquals(signed.toByteArray(),
        NativeSignatures.signProof(proof(), KEY).toByteArray(), "deterministic");
    assertFalse(NativeSignatures.verifyProof(signed, OTHER.publicKey()));
    assertFalse(NativeSignatures.verifyProof(signed.toBuilder().setCredentialEpoch(3).build(),
        KEY.publicKey()));
    assertFalse(NativeSignatures.verifyProof(signed.toBuilder().setHasRole(false).build(),
        KEY.publicKey()));
  }

  @Test
  void commandSignatureCoversTheExactBytes() {
    NativeCommand c = NativeCommand.newBuilder().setPrincipal(1).setSequence(5).setNamespace(5)
        .setBegin(BeginUpload.newBuilder().setBundleBytes(10).setPartCount(1)).build();
    SignedCommand s = NativeSignatures.signCommand(c, KEY);
    assertTrue(NativeSignatures.verifyCommand(s, KEY.publicKey()));
    assertFalse(NativeSignatures.verifyCommand(s, OTHER.publicKey()));
    SignedCommand moved = s.toBuilder().setCommand(
        c.toBuilder().setSequence(6).build().toByteString()).build();
    assertFalse(NativeSignatures.verifyCommand(moved, KEY.publicKey()));
    assertArrayEquals(DeterministicProto.bytes(c), s.getCommand().toByteArray());
    assertTrue(KEY.publicKey().verify(
        Digests.domainSha256("transit.native.command.v1", s.getCommand().toByteArray()),
        s.getSignature().toByteArray()));
  }
}
