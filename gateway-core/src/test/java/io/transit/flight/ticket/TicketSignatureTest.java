package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import java.security.MessageDigest;
import java.util.Arrays;
import net.i2p.crypto.eddsa.EdDSAEngine;
import net.i2p.crypto.eddsa.EdDSAPublicKey;
import net.i2p.crypto.eddsa.spec.EdDSANamedCurveTable;
import net.i2p.crypto.eddsa.spec.EdDSAPublicKeySpec;
import org.junit.jupiter.api.Test;

/** The ticket signature against two independent Ed25519 implementations. */
class TicketSignatureTest {
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

        assertArrayEquals(JdkEd25519.sign(seed(first), signedDigest(ticket)), ours);
        assertTrue(jdkVerify(key.publicKey().encoded(), signedDigest(ticket), ours));
      }
    }
  }

  private static byte[] signedDigest(byte[] ticket) {
    return Digests.domainSha256(
        "transit.flight.ticket.v1", Arrays.copyOf(ticket, ticket.length - 64));
  }

  /** Adds L to the little-endian S in bytes 32..63 (S is the last 32 bytes). */
  private static byte[] withSPlusL(byte[] signature) {
    return Ftk1Vectors.withSPlusL(signature);
  }

  private static boolean jdkVerify(byte[] publicKey, byte[] message, byte[] signature)
      throws Exception {
    return JdkEd25519.verify(publicKey, message, signature);
  }
}
