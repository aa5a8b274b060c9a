package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.*;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.PrincipalProof;
import org.junit.jupiter.api.Test;

class ProofVerdictsTest {
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
      ProofVerdicts verdicts = new ProofVerdicts(pool);
      PrincipalProof good = proof(7);
      verdicts.prefetch(good, KEY.publicKey());
      assertEquals(1, verdicts.size());
      assertTrue(verdicts.verify(good, KEY.publicKey()));
      assertEquals(0, verdicts.size());
      assertTrue(verdicts.verify(good, KEY.publicKey()), "without a prefetch: verified inline");
    }
  }

  @Test
  void aPrefetchUnderOneKeyNeverAnswersForAnotherKeyOrAnotherSignature() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      ProofVerdicts verdicts = new ProofVerdicts(pool);
      PrincipalProof good = proof(7);
      verdicts.prefetch(good, KEY.publicKey());
      // The key rotated between seal and submit: the current key decides.
      assertFalse(verdicts.verify(good, OTHER.publicKey()));
      byte[] sig = good.getSignature().toByteArray();
      sig[0] ^= 1;
      PrincipalProof tampered = good.toBuilder().setSignature(ByteString.copyFrom(sig)).build();
      assertFalse(verdicts.verify(tampered, KEY.publicKey()));
      PrincipalProof otherFields = good.toBuilder().setPrincipal(8).build();
      assertFalse(verdicts.verify(otherFields, KEY.publicKey()));
      assertTrue(verdicts.verify(good, KEY.publicKey()));
    }
  }

  @Test
  void theMemoIsBounded() {
    try (SignaturePool pool = SignaturePool.withHelpers(1)) {
      ProofVerdicts verdicts = new ProofVerdicts(pool);
      for (int i = 0; i < ProofVerdicts.CAPACITY + 50; i++) {
        verdicts.prefetch(proof(i), KEY.publicKey());
      }
      assertTrue(verdicts.size() <= ProofVerdicts.CAPACITY);
    }
  }
}
