package io.transit.flight.ticket;

import static io.transit.flight.ticket.Ftk1Vectors.*;
import static io.transit.flight.ticket.TicketFixtures.declaration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/vectors/ftk1.json} is regenerated from the fixed seed and clock and compared byte
 * for byte, so any change to a ticket byte fails here; run with {@code
 * -Dftk1.vectors.write=true} to rewrite it after a deliberate change. Every committed case is
 * then verified through {@link TicketService#verify} and must give exactly its recorded outcome.
 */
class Ftk1VectorsTest {

  @Test
  void regeneratedVectorsEqualTheCommittedFileByteForByte() throws Exception {
    String generated = JSON.writeValueAsString(generate()) + "\n";
    if (Boolean.getBoolean("ftk1.vectors.write")) {
      Files.createDirectories(file().getParent());
      Files.writeString(file(), generated, StandardCharsets.UTF_8);
    }
    assertTrue(Files.exists(file()), "missing " + file() + " (run with -Dftk1.vectors.write=true)");
    assertEquals(generated, Files.readString(file(), StandardCharsets.UTF_8));
  }

  @Test
  void everyCommittedCaseVerifiesToItsRecordedOutcome() throws Exception {
    JsonNode root = JSON.readTree(file().toFile());
    TicketService service = verifier();
    assertEquals(root.at("/verification/clock_unix_ms").asText(), Long.toString(VERIFY_CLOCK));
    assertEquals(root.at("/definition/digest_hex").asText(), service.definition().hex());
    Set<String> names = new HashSet<>();
    int valid = 0;
    for (JsonNode c : root.get("cases")) {
      String name = c.get("name").asText();
      assertTrue(names.add(name), "duplicate case " + name);
      byte[] ticket = HEX.parseHex(c.get("ticket_hex").asText());
      assertEquals(c.get("size").asInt(), ticket.length, name);
      TicketScope scope = scopeNamed(c.get("verify_as").asText());
      if (c.get("valid").asBoolean()) {
        valid++;
        VerifiedTicket t = service.verify(ticket, scope, declaration());
        JsonNode f = c.get("fields");
        assertEquals(f.get("tag").asInt(), t.reference().tag(), name);
        assertEquals(f.get("expiry_unix_ms").asText(), Long.toUnsignedString(t.expiryMillis()));
        assertEquals(f.get("has_role").asBoolean(), t.scope().hasRole(), name);
        assertTrue(c.get("signature_verifies").asBoolean(), name);
      } else {
        GatewayException e =
            assertThrows(GatewayException.class, () -> service.verify(ticket, scope, declaration()),
                name);
        JsonNode expected = c.get("expected");
        assertEquals(expected.get("code").asText(), e.code(), name);
        assertEquals(expected.get("cause").asText(), e.kind().name(), name);
        assertEquals(expected.get("grpc_status").asText(), e.kind().code().name(), name);
      }
    }
    assertEquals(5, valid);
    // Both tags, both role states and both size bounds are among the valid cases.
    assertTrue(names.containsAll(Set.of("statement_role", "statement_no_role",
        "metadata_no_role_empty_command_minimum_size",
        "metadata_role_1019_byte_command_maximum_size")));
  }
}
