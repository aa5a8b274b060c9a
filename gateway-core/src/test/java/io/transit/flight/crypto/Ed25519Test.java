package io.transit.flight.crypto;

import static org.junit.jupiter.api.Assertions.*;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class Ed25519Test {
  private static final BigInteger L =
      BigInteger.TWO.pow(252).add(new BigInteger("27742317777372353535851937790883648493"));

  /** A 64-byte signature whose S (bytes 32..63, little endian) is {@code s}. */
  private static byte[] withS(BigInteger s) {
    byte[] sig = new byte[Ed25519.SIGNATURE_BYTES];
    byte[] be = s.toByteArray();
    for (int i = 0; i < be.length && i < 32; i++) {
      sig[32 + i] = be[be.length - 1 - i];
    }
    return sig;
  }

  @Test
  void canonicalSIsExactlyBelowTheGroupOrder() {
    assertTrue(Ed25519.canonicalS(withS(BigInteger.ZERO)));
    assertTrue(Ed25519.canonicalS(withS(L.subtract(BigInteger.ONE))));
    assertFalse(Ed25519.canonicalS(withS(L)));
    assertFalse(Ed25519.canonicalS(withS(L.add(BigInteger.ONE))));
    assertFalse(Ed25519.canonicalS(withS(BigInteger.TWO.pow(256).subtract(BigInteger.ONE))));
    // Differs from L only below the top byte, in both directions.
    assertTrue(Ed25519.canonicalS(withS(L.subtract(BigInteger.TWO.pow(128)))));
    assertFalse(Ed25519.canonicalS(withS(L.add(BigInteger.TWO.pow(128)))));
  }

  @Test
  void aSignatureWithLAddedToSIsRefused() {
    Ed25519.KeyPair key = Ed25519.fromSeed(new byte[32]);
    byte[] message = Digests.sha256(new byte[] {1, 2, 3});
    byte[] sig = key.sign(message);
    assertTrue(key.publicKey().verify(message, sig));
    byte[] le = Arrays.copyOfRange(sig, 32, 64);
    byte[] be = new byte[32];
    for (int i = 0; i < 32; i++) {
      be[i] = le[31 - i];
    }
    byte[] malleated = withS(new BigInteger(1, be).add(L));
    System.arraycopy(sig, 0, malleated, 0, 32);
    assertFalse(key.publicKey().verify(message, malleated));
  }

  /** Each thread reuses its own engine: results must equal a fresh single-threaded run. */
  @Test
  void threadsReusingTheirEnginesAgreeWithEachOther() throws Exception {
    Ed25519.KeyPair key = Ed25519.fromSeed(Digests.sha256(new byte[] {9}));
    int messages = 24;
    List<byte[]> expected = new ArrayList<>();
    for (int i = 0; i < messages; i++) {
      expected.add(key.sign(Digests.sha256(new byte[] {(byte) i})));
    }
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      List<Future<Boolean>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int offset = t;
        results.add(threads.submit(() -> {
          for (int round = 0; round < 3; round++) {
            for (int i = 0; i < messages; i++) {
              int m = (i + offset) % messages;
              byte[] msg = Digests.sha256(new byte[] {(byte) m});
              byte[] sig = key.sign(msg);
              if (!Arrays.equals(expected.get(m), sig) || !key.publicKey().verify(msg, sig)) {
                return false;
              }
              byte[] other = Digests.sha256(new byte[] {(byte) (m + 1)});
              if (key.publicKey().verify(other, sig)) {
                return false; // a stale engine state would show up here
              }
            }
          }
          return true;
        }));
      }
      for (Future<Boolean> r : results) {
        assertTrue(r.get(60, TimeUnit.SECONDS));
      }
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
