package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import java.math.BigInteger;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPrivateKeySpec;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;
import java.util.Arrays;
import net.i2p.crypto.eddsa.EdDSAEngine;
import net.i2p.crypto.eddsa.EdDSAPublicKey;
import net.i2p.crypto.eddsa.spec.EdDSANamedCurveTable;
import net.i2p.crypto.eddsa.spec.EdDSAPublicKeySpec;
import org.junit.jupiter.api.Test;

/** The ticket signature against two independent Ed25519 implementations. */
class TicketSignatureTest {
  private static final BigInteger L =
      BigInteger.TWO.pow(252).add(new BigInteger("27742317777372353535851937790883648493"));

  @Test
  void malleatedSignatureThatRawEddsaAcceptsIsRejected() throws Exception {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    int signed = ticket.length - 64;
    byte[] message = signedDigest(ticket);
    byte[] malleated = withSPlusL(Arrays.copyOfRange(ticket, signed, ticket.length));
    byte[] forged = ticket.clone();
    System.arraycopy(malleated, 0, forged, signed, 64);

    // eddsa 0.3.0 on its own accepts S + L (CVE-2020-36843) ...
    EdDSAEngine raw = new EdDSAEngine(MessageDigest.getInstance("SHA-512"));
    raw.initVerify(
        new EdDSAPublicKey(
            new EdDSAPublicKeySpec(
                key().publicKey().encoded(),
                EdDSANamedCurveTable.getByName(EdDSANamedCurveTable.ED_25519))));
    assertTrue(raw.verifyOneShot(message, malleated), "raw eddsa should accept S+L");
    // ... the JDK does not ...
    assertFalse(jdkVerify(key().publicKey().encoded(), message, malleated));
    // ... and neither do tickets.
    rejects(service, forged, scope(), Cause.INVALID_TICKET, "ticket.signature");
  }

  @Test
  void signatureIsByteIdenticalToTheJdkEd25519() throws Exception {
    for (int first : new int[] {0, 42, 200}) {
      Ed25519.KeyPair key = Ed25519.fromSeed(seed(first));
      TicketService service = new TicketService(key, definition(), clockAt(EXPIRY - 1));
      for (TicketReference ref : new TicketReference[] {statement(), metadata(300)}) {
        byte[] ticket = service.issue(scope(), declaration(), EXPIRY, ref);
        byte[] ours = Arrays.copyOfRange(ticket, ticket.length - 64, ticket.length);

        PrivateKey jdkKey =
            KeyFactory.getInstance("Ed25519")
                .generatePrivate(new EdECPrivateKeySpec(NamedParameterSpec.ED25519, seed(first)));
        Signature jdk = Signature.getInstance("Ed25519");
        jdk.initSign(jdkKey);
        jdk.update(signedDigest(ticket));
        assertArrayEquals(jdk.sign(), ours);
        assertTrue(jdkVerify(key.publicKey().encoded(), signedDigest(ticket), ours));
      }
    }
  }

  private static byte[] signedDigest(byte[] ticket) {
    return Digests.domainSha256(
        "transit.flight.ticket.v1", Arrays.copyOf(ticket, ticket.length - 64));
  }

  /** Adds L to the little-endian S in bytes 32..63; still fits: S + L &lt; 2^253. */
  private static byte[] withSPlusL(byte[] signature) {
    byte[] sBigEndian = new byte[32];
    for (int i = 0; i < 32; i++) {
      sBigEndian[i] = signature[63 - i];
    }
    BigInteger s = new BigInteger(1, sBigEndian).add(L);
    byte[] be = s.toByteArray();
    byte[] out = signature.clone();
    Arrays.fill(out, 32, 64, (byte) 0);
    for (int i = 0; i < be.length && i < 32; i++) {
      out[32 + i] = be[be.length - 1 - i];
    }
    assertTrue(s.bitLength() <= 256);
    return out;
  }

  /** JDK verification from the raw 32-byte RFC 8032 public key encoding. */
  private static boolean jdkVerify(byte[] publicKey, byte[] message, byte[] signature)
      throws Exception {
    byte[] yBigEndian = new byte[32];
    for (int i = 0; i < 32; i++) {
      yBigEndian[i] = publicKey[31 - i];
    }
    boolean xOdd = (yBigEndian[0] & 0x80) != 0;
    yBigEndian[0] &= 0x7F;
    PublicKey key =
        KeyFactory.getInstance("Ed25519")
            .generatePublic(
                new EdECPublicKeySpec(
                    NamedParameterSpec.ED25519,
                    new EdECPoint(xOdd, new BigInteger(1, yBigEndian))));
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
}
