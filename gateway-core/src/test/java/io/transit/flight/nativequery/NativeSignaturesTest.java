package io.transit.flight.nativequery;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

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
  void proofEncodingIsFixedLittleEndianLayout() {
    byte[] e = NativeSignatures.encodeProofFields(proof());
    assertEquals(8 + 1 + 8 + 8 + 4 + 32 + 8, e.length);
    assertEquals("0807060504030201" + "01" + "0900000000000000" + "0200000000000000"
        + "20000000", HexFormat.of().formatHex(e, 0, 29));
    assertEquals("ffffffffffffffff", HexFormat.of().formatHex(e, e.length - 8, e.length));
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
  }
}
