package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.*;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;
import org.junit.jupiter.api.Test;

class SignatureVerdictsTest {
  private static final Ed25519.KeyPair KEY = Ed25519.fromSeed(Digests.sha256(new byte[] {1}));
  private static final Ed25519.KeyPair OTHER = Ed25519.fromSeed(Digests.sha256(new byte[] {2}));

  private static PrincipalProof proof(long principal) {
    return NativeSignatures.signProof(PrincipalProof.newBuilder()
        .setPrincipal(principal)
        .setCredentialEpoch(3)
        .setQuerySha256(ByteString.copyFrom(Digests.sha256(new byte[] {4})))
        .setRecipient(5)
        .build(), KEY);
  }

  @Test
  void aPrefetchedVerdictIsTheVerdictAndIsUsedOnce() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      SignatureVerdicts verdicts = new SignatureVerdicts(pool);
      PrincipalProof good = proof(7);
      verdicts.prefetchProof(good, KEY.publicKey());
      assertEquals(1, verdicts.size());
      assertTrue(verdicts.verifyProof(good, KEY.publicKey()));
      assertEquals(0, verdicts.size());
      assertTrue(verdicts.verifyProof(good, KEY.publicKey()), "without a prefetch: verified inline");
    }
  }

  @Test
  void aPrefetchUnderOneKeyNeverAnswersForAnotherKeyOrAnotherSignature() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      SignatureVerdicts verdicts = new SignatureVerdicts(pool);
      PrincipalProof good = proof(7);
      verdicts.prefetchProof(good, KEY.publicKey());
      // The key rotated between seal and submit: the current key decides.
      assertFalse(verdicts.verifyProof(good, OTHER.publicKey()));
      byte[] sig = good.getSignature().toByteArray();
      sig[0] ^= 1;
      PrincipalProof tampered = good.toBuilder().setSignature(ByteString.copyFrom(sig)).build();
      assertFalse(verdicts.verifyProof(tampered, KEY.publicKey()));
      PrincipalProof otherFields = good.toBuilder().setPrincipal(8).build();
      assertFalse(verdicts.verifyProof(otherFields, KEY.publicKey()));
      assertTrue(verdicts.verifyProof(good, KEY.publicKey()));
    }
  }

  @Test
  void aPrefetchedCommandVerdictAnswersOnlyForTheSameBytesSignatureAndKey() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      SignatureVerdicts verdicts = new SignatureVerdicts(pool);
      SignedCommand good = NativeSignatures.signCommand(NativeCommand.newBuilder()
          .setPrincipal(7).setSequence(2).setNamespace(1).build(), KEY);
      SignedCommand forged = NativeSignatures.signCommand(NativeCommand.newBuilder()
          .setPrincipal(7).setSequence(2).setNamespace(1).build(), OTHER);
      verdicts.prefetchCommand(good, KEY.publicKey());
      verdicts.prefetchCommand(forged, KEY.publicKey());
      assertFalse(verdicts.verifyCommand(forged, KEY.publicKey()));
      // Another key than the one prefetched under (a rotation) misses and verifies inline.
      assertFalse(verdicts.verifyCommand(good, OTHER.publicKey()));
      assertTrue(verdicts.verifyCommand(good, KEY.publicKey()));
      assertEquals(0, verdicts.size());
      // Other command bytes under the same signature miss the memo and fail inline.
      SignedCommand sameSignature = good.toBuilder()
          .setCommand(good.getCommand().concat(ByteString.copyFrom(new byte[] {0}))).build();
      assertFalse(verdicts.verifyCommand(sameSignature, KEY.publicKey()));
    }
  }

  @Test
  void theMemoIsBounded() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      SignatureVerdicts verdicts = new SignatureVerdicts(pool);
      for (int i = 0; i < SignatureVerdicts.CAPACITY + 50; i++) {
        verdicts.prefetchProof(proof(i), KEY.publicKey());
      }
      assertTrue(verdicts.size() <= SignatureVerdicts.CAPACITY);
    }
  }
}
