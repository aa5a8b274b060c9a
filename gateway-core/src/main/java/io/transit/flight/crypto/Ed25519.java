package io.transit.flight.crypto;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import net.i2p.crypto.eddsa.EdDSAEngine;
import net.i2p.crypto.eddsa.EdDSAPrivateKey;
import net.i2p.crypto.eddsa.EdDSAPublicKey;
import net.i2p.crypto.eddsa.spec.EdDSANamedCurveTable;
import net.i2p.crypto.eddsa.spec.EdDSAParameterSpec;
import net.i2p.crypto.eddsa.spec.EdDSAPrivateKeySpec;
import net.i2p.crypto.eddsa.spec.EdDSAPublicKeySpec;

/**
 * Ed25519 over eddsa 0.3.0, with the canonical-S check that library lacks: it accepts a
 * signature whose S has L added (CVE-2020-36843), so {@link #verify} rejects S ≥ L before
 * asking it. Signatures are deterministic: the same seed and message give the same bytes.
 *
 * <p>Thread-safe. Keys are immutable and expanded once: a {@link KeyPair} holds the seed's
 * SHA-512 expansion and the public point A, a {@link PublicKey} the decoded point −A with its
 * double-scalar table, so no sign or verify repeats that work. Each calling thread reuses its own
 * {@link EdDSAEngine} and SHA-512 digest ({@link #ENGINES}); an engine is confined to its thread
 * and left reset after every call (one-shot mode resets it on every exit). The per-operation
 * garbage that remains (≈ 0.3 MB) is the library's field arithmetic, which allocates a new
 * element per operation.
 */
public final class Ed25519 {
  public static final int SEED_BYTES = 32;
  public static final int PUBLIC_KEY_BYTES = 32;
  public static final int SIGNATURE_BYTES = 64;

  private static final EdDSAParameterSpec SPEC =
      EdDSANamedCurveTable.getByName(EdDSANamedCurveTable.ED_25519);

  /**
   * The group order L = 2^252 + 27742317777372353535851937790883648493, little endian (the byte
   * order of S in a signature), so that S is compared without a BigInteger per verification.
   */
  private static final byte[] L_LE = {
    (byte) 0xed, (byte) 0xd3, (byte) 0xf5, (byte) 0x5c, (byte) 0x1a, (byte) 0x63, (byte) 0x12,
    (byte) 0x58, (byte) 0xd6, (byte) 0x9c, (byte) 0xf7, (byte) 0xa2, (byte) 0xde, (byte) 0xf9,
    (byte) 0xde, (byte) 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0x10
  };

  /**
   * One engine per thread: an {@link EdDSAEngine} is stateful between init and sign/verify, so it
   * is never shared; reusing it saves the provider look-up of SHA-512 and two objects per call.
   * The gateway's callers are pooled threads (gRPC service executor, T_caller workers, the
   * engine's senders), so the number of engines stays bounded by those pools.
   */
  private static final ThreadLocal<EdDSAEngine> ENGINES =
      ThreadLocal.withInitial(() -> new EdDSAEngine(sha512()));

  private Ed25519() {}

  /** A private signing key (its 32-byte seed) and the matching public key. */
  public static final class KeyPair {
    private final EdDSAPrivateKey privateKey;
    private final PublicKey publicKey;

    private KeyPair(byte[] seed) {
      if (seed.length != SEED_BYTES) {
        throw new IllegalArgumentException(
            "seed: " + seed.length + " bytes (expected: " + SEED_BYTES + ")");
      }
      this.privateKey = new EdDSAPrivateKey(new EdDSAPrivateKeySpec(seed, SPEC));
      this.publicKey = new PublicKey(privateKey.getAbyte());
    }

    public PublicKey publicKey() {
      return publicKey;
    }

    /** The 32-byte seed (a copy); only key files should ever see it. */
    public byte[] seed() {
      return privateKey.getSeed().clone();
    }

    /** Signs {@code message}; 64 bytes, deterministic. */
    public byte[] sign(byte[] message) {
      try {
        EdDSAEngine engine = ENGINES.get();
        engine.initSign(privateKey);
        return engine.signOneShot(message);
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("Ed25519 signing failed", e);
      }
    }
  }

  /** A 32-byte Ed25519 public key. */
  public static final class PublicKey {
    private final byte[] encoded;
    private final EdDSAPublicKey key;

    private PublicKey(byte[] encoded) {
      if (encoded.length != PUBLIC_KEY_BYTES) {
        throw new IllegalArgumentException(
            "public key: " + encoded.length + " bytes (expected: " + PUBLIC_KEY_BYTES + ")");
      }
      this.encoded = encoded.clone();
      this.key = new EdDSAPublicKey(new EdDSAPublicKeySpec(this.encoded, SPEC));
    }

    public static PublicKey fromBytes(byte[] encoded) {
      return new PublicKey(encoded);
    }

    public byte[] encoded() {
      return encoded.clone();
    }

    /**
     * True only for a 64-byte signature with canonical S (S &lt; L) that verifies over
     * {@code message}. Never throws for malformed input.
     */
    public boolean verify(byte[] message, byte[] signature) {
      if (signature == null || signature.length != SIGNATURE_BYTES || !canonicalS(signature)) {
        return false;
      }
      try {
        EdDSAEngine engine = ENGINES.get();
        engine.initVerify(key);
        return engine.verifyOneShot(message, signature);
      } catch (GeneralSecurityException | RuntimeException e) {
        return false;
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof PublicKey other && Arrays.equals(encoded, other.encoded);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(encoded);
    }
  }

  public static KeyPair fromSeed(byte[] seed) {
    return new KeyPair(seed);
  }

  public static KeyPair generate(SecureRandom random) {
    byte[] seed = new byte[SEED_BYTES];
    random.nextBytes(seed);
    return new KeyPair(seed);
  }

  /** S is the little-endian integer in bytes 32..63 of the signature; canonical iff S &lt; L. */
  static boolean canonicalS(byte[] signature) {
    // Compare from the most significant byte down; the first difference decides.
    for (int i = SEED_BYTES - 1; i >= 0; i--) {
      int s = signature[SEED_BYTES + i] & 0xff;
      int l = L_LE[i] & 0xff;
      if (s != l) {
        return s < l;
      }
    }
    return false; // S == L
  }

  private static MessageDigest sha512() {
    try {
      return MessageDigest.getInstance("SHA-512");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
