package io.transit.flight.ticket;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * Verifies {@code docs/vectors/ftk1.json} from the file alone with the JDK's own Ed25519
 * ({@code java.security}, not the eddsa library the gateway signs with) and the JDK's SHA-256,
 * as an independent implementation would: nothing here calls gateway code.
 */
class Ftk1VectorsJdkTest {
  private static final HexFormat HEX = HexFormat.of();

  @Test
  void jdkEd25519VerifiesTheValidTicketsAndRefusesTheForgedSignatures() throws Exception {
    Path file =
        Path.of(System.getProperty("basedir", ".")).resolve("../docs/vectors/ftk1.json").normalize();
    JsonNode root = new ObjectMapper().readTree(file.toFile());
    byte[] publicKey = HEX.parseHex(root.get("ticket_public_key_hex").asText());
    byte[] seed = HEX.parseHex(root.get("ticket_key_seed_hex").asText());
    byte[] domain = root.get("signature_domain").asText().getBytes(StandardCharsets.US_ASCII);

    JsonNode def = root.get("definition");
    byte[] definition = HEX.parseHex(def.get("digest_hex").asText());
    assertArrayEquals(definition,
        sha256(def.get("domain").asText().getBytes(StandardCharsets.US_ASCII),
            HEX.parseHex(def.get("encoding_hex").asText())));

    int valid = 0;
    for (JsonNode c : root.get("cases")) {
      String name = c.get("name").asText();
      byte[] ticket = HEX.parseHex(c.get("ticket_hex").asText());
      boolean verifies = false;
      if (ticket.length >= 64) {
        int signed = ticket.length - 64;
        byte[] digest = sha256(domain, Arrays.copyOf(ticket, signed));
        byte[] signature = Arrays.copyOfRange(ticket, signed, ticket.length);
        verifies = JdkEd25519.verify(publicKey, digest, signature);
        if (verifies) {
          // Ed25519 is deterministic: the seed re-creates exactly this signature.
          assertArrayEquals(JdkEd25519.sign(seed, digest), signature, name);
        }
      }
      assertEquals(c.get("signature_verifies").asBoolean(), verifies, name);
      if (c.get("valid").asBoolean()) {
        valid++;
        assertTrue(verifies, name);
        assertArrayEquals(definition, Arrays.copyOf(ticket, 32), name);
        assertEquals(c.at("/fields/signature_hex").asText(),
            HEX.formatHex(Arrays.copyOfRange(ticket, ticket.length - 64, ticket.length)), name);
      } else if (c.at("/expected/code").asText().equals("ticket.signature")) {
        assertTrue(!verifies, name);
      }
    }
    assertEquals(5, valid);
  }

  private static byte[] sha256(byte[] domain, byte[] bytes) throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    sha.update(domain);
    sha.update((byte) 0);
    sha.update(bytes);
    return sha.digest();
  }
}
