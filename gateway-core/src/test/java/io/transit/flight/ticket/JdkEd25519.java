package io.transit.flight.ticket;

import java.math.BigInteger;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPrivateKeySpec;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;

/** The JDK's own Ed25519 (SunEC) over raw RFC 8032 encodings, as an independent reference. */
final class JdkEd25519 {
  private JdkEd25519() {}

  /** Verifies with the 32-byte RFC 8032 public key; a non-canonical S is a failure. */
  static boolean verify(byte[] publicKey, byte[] message, byte[] signature) throws Exception {
    byte[] yBigEndian = new byte[32];
    for (int i = 0; i < 32; i++) {
      yBigEndian[i] = publicKey[31 - i];
    }
    // The top bit of the last encoded byte is the sign of x; the rest is y.
    boolean xOdd = (yBigEndian[0] & 0x80) != 0;
    yBigEndian[0] &= 0x7F;
    PublicKey key =
        KeyFactory.getInstance("Ed25519")
            .generatePublic(
                new EdECPublicKeySpec(
                    NamedParameterSpec.ED25519, new EdECPoint(xOdd, new BigInteger(1, yBigEndian))));
    Signature jdk = Signature.getInstance("Ed25519");
    jdk.initVerify(key);
    jdk.update(message);
    try {
      return jdk.verify(signature);
    } catch (SignatureException e) {
      // The JDK reports a non-canonical S ("s is too large") by throwing.
      return false;
    }
  }

  /** Signs with the 32-byte RFC 8032 seed. */
  static byte[] sign(byte[] seed, byte[] message) throws Exception {
    Signature jdk = Signature.getInstance("Ed25519");
    jdk.initSign(
        KeyFactory.getInstance("Ed25519")
            .generatePrivate(new EdECPrivateKeySpec(NamedParameterSpec.ED25519, seed)));
    jdk.update(message);
    return jdk.sign();
  }
}
