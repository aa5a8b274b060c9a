package io.transit.flight.admission;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.DeterministicProto;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.RequestBundle;
import io.transit.flight.proto.SignedCommand;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Golden vectors for the bundle, proof and command encodings: {@code docs/vectors/admission.json}
 * is regenerated from fixed seeds and compared, so any change to a byte the native engine or a
 * replacement gateway depends on fails here. Run with {@code -Dadmission.vectors.write=true} to
 * rewrite the file after a deliberate encoding change.
 */
class GoldenVectorsTest {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final HexFormat HEX = HexFormat.of();

  private record Case(
      String name, byte[] seed, AdmissionSubject caller, String sql, long first, int partBytes) {}

  private static List<Case> cases() {
    byte[] seedA = Fixtures.seed(1);
    byte[] seedB = Fixtures.seed(0x41);
    long principalB = Long.parseUnsignedLong("18446744073709551000");
    return List.of(
        new Case("role_high_first_sequence_64_byte_parts", seedA,
            new AdmissionSubject(Fixtures.PRINCIPAL, Ed25519.fromSeed(seedA), true, Fixtures.ROLE,
                Fixtures.EPOCH, Fixtures.SERVICE),
            "SELECT id, fare FROM trips WHERE distance > 5", Long.parseUnsignedLong("9223372036854775813"),
            64),
        new Case("no_role_high_principal_default_parts", seedB,
            AdmissionSubject.withoutRole(principalB, Ed25519.fromSeed(seedB), 1, 2),
            "SELECT COUNT(*) FROM trips WHERE fare IS NULL", 1, CommandChain.DEFAULT_PART_BYTES));
  }

  private static ObjectNode generate(Case c) {
    Budgets budgets = Fixtures.budgets();
    CanonicalBundle bundle =
        CanonicalBundle.build(c.caller, Fixtures.table(), budgets, c.sql.getBytes(StandardCharsets.UTF_8));
    CommandChain chain =
        CommandChain.derive(bundle.bytes(), c.caller.principal(), c.caller.key(), c.first, c.partBytes);
    ObjectNode node = JSON.createObjectNode();
    node.put("name", c.name);
    node.put("principal_seed_hex", HEX.formatHex(c.seed));
    node.put("public_key_hex", HEX.formatHex(c.caller.key().publicKey().encoded()));
    node.put("principal", Long.toUnsignedString(c.caller.principal()));
    node.put("has_role", c.caller.hasRole());
    node.put("role", Long.toUnsignedString(c.caller.role()));
    node.put("credential_epoch", Long.toUnsignedString(c.caller.credentialEpoch()));
    node.put("service_id", Long.toUnsignedString(c.caller.serviceId()));
    node.put("table_declaration_hex", HEX.formatHex(DeterministicProto.bytes(Fixtures.table())));
    node.put("budgets_hex", HEX.formatHex(DeterministicProto.bytes(budgets)));
    node.put("sql_utf8", c.sql);
    node.put("first_sequence", Long.toUnsignedString(c.first));
    node.put("part_bytes", c.partBytes);
    node.put("declaration_sha256_hex",
        HEX.formatHex(DeclarationFingerprint.of(Fixtures.table())));
    node.put("proof_encoding_hex",
        HEX.formatHex(NativeSignatures.encodeProofFields(bundle.message().getProof())));
    node.put("proof_signature_hex",
        HEX.formatHex(bundle.message().getProof().getSignature().toByteArray()));
    node.put("bundle_hex", HEX.formatHex(bundle.bytes()));
    node.put("bundle_sha256_hex", HEX.formatHex(bundle.sha256()));
    ArrayNode commands = node.putArray("commands");
    for (int i = 0; i < chain.commands().size(); i++) {
      ObjectNode cmd = commands.addObject();
      cmd.put("sequence", Long.toUnsignedString(chain.sequenceAt(i)));
      cmd.put("signed_command_hex", HEX.formatHex(chain.commands().get(i).toByteArray()));
    }
    node.put("next_sequence", Long.toUnsignedString(chain.nextSequence()));
    return node;
  }

  private static JsonNode generateAll() {
    ObjectNode root = JSON.createObjectNode();
    root.put("version", 1);
    root.put("description",
        "Admission golden vectors: canonical request bundle, principal proof and signed native"
            + " command chain from fixed Ed25519 seeds. See docs/admission.md.");
    ArrayNode list = root.putArray("cases");
    cases().forEach(c -> list.add(generate(c)));
    return root;
  }

  private static Path file() {
    return Path.of(System.getProperty("basedir", "."))
        .resolve("../docs/vectors/admission.json")
        .normalize();
  }

  @Test
  void regeneratedVectorsEqualTheCommittedFile() throws Exception {
    JsonNode generated = generateAll();
    if (Boolean.getBoolean("admission.vectors.write")) {
      Files.createDirectories(file().getParent());
      Files.writeString(file(), JSON.writeValueAsString(generated) + "\n");
    }
    assertTrue(Files.exists(file()), "missing " + file());
    assertEquals(JSON.readTree(file().toFile()), generated);
  }

  /** Checks the committed bytes on their own terms, independently of the generator above. */
  @Test
  void committedVectorsVerifyWithTheirPublicKeys() throws Exception {
    JsonNode root = JSON.readTree(file().toFile());
    assertEquals(cases().size(), root.get("cases").size());
    for (JsonNode c : root.get("cases")) {
      Ed25519.PublicKey key = Ed25519.PublicKey.fromBytes(HEX.parseHex(c.get("public_key_hex").asText()));
      assertEquals(key, Ed25519.fromSeed(HEX.parseHex(c.get("principal_seed_hex").asText())).publicKey());
      byte[] bundleBytes = HEX.parseHex(c.get("bundle_hex").asText());
      assertEquals(c.get("bundle_sha256_hex").asText(), Digests.hex(Digests.sha256(bundleBytes)));
      RequestBundle bundle = RequestBundle.parseFrom(bundleBytes);
      assertEquals(c.get("sql_utf8").asText(), bundle.getSql().toStringUtf8());
      assertEquals(c.get("proof_encoding_hex").asText(),
          Digests.hex(NativeSignatures.encodeProofFields(bundle.getProof())));
      assertTrue(NativeSignatures.verifyProof(bundle.getProof(), key));

      long sequence = Long.parseUnsignedLong(c.get("first_sequence").asText());
      for (JsonNode cmd : c.get("commands")) {
        SignedCommand signed = SignedCommand.parseFrom(HEX.parseHex(cmd.get("signed_command_hex").asText()));
        NativeCommand command = NativeCommand.parseFrom(signed.getCommand());
        assertEquals(Long.toUnsignedString(sequence), cmd.get("sequence").asText());
        assertEquals(sequence, command.getSequence());
        assertTrue(key.verify(NativeSignatures.commandMessage(signed.getCommand().toByteArray()),
            signed.getSignature().toByteArray()));
        sequence++;
      }
      assertEquals(Long.toUnsignedString(sequence), c.get("next_sequence").asText());
    }
  }
}
