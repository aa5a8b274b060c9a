package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * Builds the content of {@code docs/vectors/ftk1.json} from fixed seeds and a fixed clock: the
 * ticket key, the Transit definition inputs, the verification inputs and one case per valid
 * shape and per reject. Every ticket comes from {@link TicketService#issue} (rejects are edits
 * of issued tickets, re-signed where only the layout should fail), so the file records what the
 * code produces, not what a test author believes it produces.
 */
final class Ftk1Vectors {
  static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  static final HexFormat HEX = HexFormat.of();
  static final String REALM_NAME = "demo-realm";
  /** Tickets expire at {@link TicketFixtures#EXPIRY}; they are verified one millisecond before. */
  static final long VERIFY_CLOCK = EXPIRY - 1;
  static final String WITH_ROLE = "with_role";
  static final String WITHOUT_ROLE = "without_role";

  private static final BigInteger L =
      BigInteger.TWO.pow(252).add(new BigInteger("27742317777372353535851937790883648493"));

  /** One vector: the ticket, the scope it is verified against and the expected failure. */
  record Case(String name, byte[] ticket, String verifyAs, Cause cause, String code, String how) {
    boolean valid() {
      return code == null;
    }
  }

  private Ftk1Vectors() {}

  static Path file() {
    return Path.of(System.getProperty("basedir", "."))
        .resolve("../docs/vectors/ftk1.json")
        .normalize();
  }

  static TicketScope scopeNamed(String name) {
    return WITH_ROLE.equals(name) ? scope() : withoutRole(scope());
  }

  static TicketScope withoutRole(TicketScope s) {
    return TicketScope.withoutRole(
        s.realm(), s.principal(), s.service(), s.bindingRevision(), s.ingress(), s.requests(),
        s.source(), s.resource());
  }

  static TicketService verifier() {
    return new TicketService(key(), definition(), clockAt(VERIFY_CLOCK));
  }

  static List<Case> cases() {
    TicketService issuer = verifier();
    TicketScope noRole = withoutRole(scope());
    byte[] stmt = issuer.issue(scope(), declaration(), EXPIRY, statement());
    byte[] stmtNoRole = issuer.issue(noRole, declaration(), EXPIRY, statement());
    byte[] meta = issuer.issue(scope(), declaration(), EXPIRY, metadata(37));
    byte[] metaEmpty = issuer.issue(noRole, declaration(), EXPIRY, metadata(0));
    byte[] metaMax =
        issuer.issue(scope(), declaration(), EXPIRY, metadata(Ftk1Layout.MAX_METADATA_COMMAND_BYTES));

    List<Case> out = new ArrayList<>();
    out.add(valid("statement_role", stmt, WITH_ROLE, "statement reference, role selected"));
    out.add(valid("statement_no_role", stmtNoRole, WITHOUT_ROLE, "statement reference, no role"));
    out.add(valid("metadata_role_37_byte_command", meta, WITH_ROLE, "metadata reference"));
    out.add(valid("metadata_no_role_empty_command_minimum_size", metaEmpty, WITHOUT_ROLE,
        "the smallest ticket: 244 bytes"));
    out.add(valid("metadata_role_1019_byte_command_maximum_size", metaMax, WITH_ROLE,
        "the largest ticket: 1263 bytes"));

    Cause bad = Cause.INVALID_TICKET;
    out.add(reject("bad_signature_bit_flip", edit(stmt, t -> t[186] ^= 0x01), WITH_ROLE, bad,
        "ticket.signature", "statement_role with bit 0 of the signature's first byte flipped"));
    out.add(reject("signed_field_changed_without_resigning", edit(stmt, t -> t[146] ^= 0x01),
        WITH_ROLE, bad, "ticket.signature", "statement_role with its correlation changed"));
    out.add(reject("malleated_signature_s_plus_l", withSPlusL(stmt), WITH_ROLE, bad,
        "ticket.signature", "statement_role with L added to S (verifies under lax Ed25519)"));
    out.add(reject("signed_by_another_key",
        new TicketService(Ed25519.fromSeed(seed(0x40)), definition(), clockAt(VERIFY_CLOCK))
            .issue(scope(), declaration(), EXPIRY, statement()),
        WITH_ROLE, bad, "ticket.signature", "statement_role issued with seed 404142...5f"));
    out.add(reject("wrong_definition",
        new TicketService(key(), TransitDefinition.of("other-realm", REALM, SERVICE),
                clockAt(VERIFY_CLOCK))
            .issue(scope(), declaration(), EXPIRY, statement()),
        WITH_ROLE, bad, "ticket.definition",
        "statement_role issued with realm name other-realm, signed with the ticket key"));
    out.add(reject("trailing_byte", Arrays.copyOf(stmt, stmt.length + 1), WITH_ROLE, bad,
        "ticket.layout", "statement_role followed by one zero byte (251 bytes)"));
    out.add(reject("trailing_byte_metadata", Arrays.copyOf(meta, meta.length + 1), WITH_ROLE,
        bad, "ticket.layout", "metadata_role_37_byte_command followed by one zero byte"));
    out.add(reject("truncated_by_one_byte", Arrays.copyOf(stmt, stmt.length - 1), WITH_ROLE,
        bad, "ticket.layout", "statement_role without its last byte (249 bytes)"));
    out.add(reject("truncated_below_minimum", Arrays.copyOf(metaEmpty, metaEmpty.length - 1),
        WITHOUT_ROLE, bad, "ticket.size", "the minimum-size ticket without its last byte"));
    out.add(reject("empty", new byte[0], WITH_ROLE, bad, "ticket.size", "zero bytes"));
    out.add(reject("oversize", Arrays.copyOf(metaMax, metaMax.length + 1), WITH_ROLE, bad,
        "ticket.size", "the maximum-size ticket followed by one zero byte (1264 bytes)"));
    out.add(reject("unknown_tag_0", resigned(stmt, key(), t -> t[145] = 0), WITH_ROLE, bad,
        "ticket.layout", "statement_role with tag 0, re-signed with the ticket key"));
    out.add(reject("unknown_tag_3", resigned(stmt, key(), t -> t[145] = 3), WITH_ROLE, bad,
        "ticket.layout", "statement_role with tag 3, re-signed with the ticket key"));
    out.add(reject("statement_bytes_tagged_metadata", resigned(stmt, key(), t -> t[145] = 2),
        WITH_ROLE, bad, "ticket.layout",
        "statement_role with tag 2 (its length does not match the command length), re-signed"));
    out.add(reject("bad_role_flag_2", resigned(stmt, key(), t -> t[96] = 2), WITH_ROLE, bad,
        "ticket.layout", "statement_role with role flag 2, re-signed with the ticket key"));
    out.add(reject("role_id_without_role_flag", resigned(stmt, key(), t -> t[96] = 0),
        WITHOUT_ROLE, bad, "ticket.layout",
        "statement_role with role flag 0 but its role id kept, re-signed with the ticket key"));
    out.add(reject("command_length_above_1019", resigned(metaMax, key(), t -> putU16(t, 146, 1020)),
        WITH_ROLE, bad, "ticket.layout",
        "the maximum-size ticket claiming a 1020-byte command, re-signed with the ticket key"));
    out.add(reject("command_length_mismatch", resigned(meta, key(), t -> putU16(t, 146, 36)),
        WITH_ROLE, bad, "ticket.layout",
        "metadata_role_37_byte_command claiming a 36-byte command, re-signed with the ticket key"));
    out.add(reject("expired_at_expiry",
        issuer.issue(scope(), declaration(), VERIFY_CLOCK, statement()), WITH_ROLE,
        Cause.TICKET_EXPIRED, "ticket.expired",
        "statement_role issued with expiry equal to the verification clock"));
    out.add(reject("scope_mismatch_role", stmt, WITHOUT_ROLE, Cause.TICKET_SCOPE, "ticket.scope",
        "statement_role verified against the scope without a role"));
    out.add(reject("declaration_mismatch",
        issuer.issue(scope(), filled(0xD1), EXPIRY, statement()), WITH_ROLE, Cause.TICKET_SCOPE,
        "ticket.declaration", "statement_role issued for declaration d1d1...d1"));
    return out;
  }

  static ObjectNode generate() {
    TransitDefinition def = definition();
    ObjectNode root = JSON.createObjectNode();
    root.put("version", 1);
    root.put("description",
        "FTK1 ticket vectors: valid tickets of both tags and rejects with their expected failure,"
            + " from a fixed ticket key and clock. See docs/tickets.md.");
    root.put("ticket_key_seed_hex", HEX.formatHex(key().seed()));
    root.put("ticket_public_key_hex", HEX.formatHex(key().publicKey().encoded()));
    root.put("signature_domain", TicketService.SIGNATURE_DOMAIN);
    root.put("signed_message",
        "SHA-256(signature_domain || 0x00 || every ticket byte before the last 64); the last 64"
            + " bytes are the pure Ed25519 signature of those 32 bytes");
    ObjectNode d = root.putObject("definition");
    d.put("domain", TransitDefinition.DOMAIN);
    d.put("digest", "SHA-256(domain || 0x00 || encoding)");
    d.put("realm_name", def.realmName());
    d.put("realm_id", Long.toUnsignedString(def.realmId()));
    d.put("service_id", Long.toUnsignedString(def.serviceId()));
    d.put("contract_version", TransitDefinition.TICKET_CONTRACT_VERSION);
    d.put("encoding_hex",
        HEX.formatHex(TransitDefinition.encode(def.realmName(), def.realmId(), def.serviceId())));
    d.put("digest_hex", def.hex());
    ObjectNode v = root.putObject("verification");
    v.put("clock_unix_ms", Long.toUnsignedString(VERIFY_CLOCK));
    v.put("declaration_sha256_hex", HEX.formatHex(declaration()));
    ObjectNode scopes = v.putObject("scopes");
    scopes.set(WITH_ROLE, scopeJson(scopeNamed(WITH_ROLE)));
    scopes.set(WITHOUT_ROLE, scopeJson(scopeNamed(WITHOUT_ROLE)));
    ObjectNode issued = root.putObject("issue_inputs");
    issued.put("expiry_unix_ms", Long.toUnsignedString(EXPIRY));
    issued.put("declaration_sha256_hex", HEX.formatHex(declaration()));
    issued.set("statement", fieldsOf(statement()));
    issued.put("metadata_command_bytes", "command[i] = (i * 7 + 3) mod 256");
    issued.put("metadata_result_sha256_hex", HEX.formatHex(filled(0xB0)));
    ArrayNode list = root.putArray("cases");
    for (Case c : cases()) {
      ObjectNode n = list.addObject();
      n.put("name", c.name());
      n.put("ticket_hex", HEX.formatHex(c.ticket()));
      n.put("size", c.ticket().length);
      n.put("valid", c.valid());
      n.put("verify_as", c.verifyAs());
      n.put("description", c.how());
      n.put("signature_verifies", signatureVerifies(c.ticket()));
      if (c.valid()) {
        n.set("fields", decode(c.ticket(), c.verifyAs()));
      } else {
        n.putNull("fields");
        ObjectNode e = n.putObject("expected");
        e.put("code", c.code());
        e.put("cause", c.cause().name());
        e.put("grpc_status", c.cause().code().name());
      }
    }
    return root;
  }

  /** The fields of a valid ticket, read back by {@link TicketService#verify}. */
  private static ObjectNode decode(byte[] ticket, String verifyAs) {
    VerifiedTicket t = verifier().verify(ticket, scopeNamed(verifyAs), declaration());
    ObjectNode f = JSON.createObjectNode();
    f.put("definition_hex", HEX.formatHex(Arrays.copyOf(ticket, 32)));
    f.setAll(scopeJson(t.scope()));
    f.put("declaration_sha256_hex", HEX.formatHex(t.declarationFingerprint()));
    f.put("expiry_unix_ms", Long.toUnsignedString(t.expiryMillis()));
    f.put("tag", t.reference().tag());
    if (t.reference() instanceof StatementReference s) {
      f.setAll(fieldsOf(s));
    } else {
      MetadataReference m = (MetadataReference) t.reference();
      f.put("command_length", m.commandLength());
      f.put("command_hex", HEX.formatHex(m.command()));
      f.put("result_sha256_hex", HEX.formatHex(m.resultSha256()));
    }
    f.put("signature_hex",
        HEX.formatHex(Arrays.copyOfRange(ticket, ticket.length - 64, ticket.length)));
    return f;
  }

  private static ObjectNode fieldsOf(StatementReference s) {
    ObjectNode f = JSON.createObjectNode();
    f.put("correlation", Long.toUnsignedString(s.correlation()));
    f.put("manifest_sha256_hex", HEX.formatHex(s.manifestSha256()));
    return f;
  }

  private static ObjectNode scopeJson(TicketScope s) {
    ObjectNode f = JSON.createObjectNode();
    f.put("realm", Long.toUnsignedString(s.realm()));
    f.put("principal", Long.toUnsignedString(s.principal()));
    f.put("service", Long.toUnsignedString(s.service()));
    f.put("binding_revision", Long.toUnsignedString(s.bindingRevision()));
    f.put("ingress", Long.toUnsignedString(s.ingress()));
    f.put("requests", Long.toUnsignedString(s.requests()));
    f.put("source", Long.toUnsignedString(s.source()));
    f.put("resource", Long.toUnsignedString(s.resource()));
    f.put("has_role", s.hasRole());
    f.put("role", Long.toUnsignedString(s.role()));
    return f;
  }

  /** Whether the last 64 bytes are a canonical signature by the ticket key over the rest. */
  static boolean signatureVerifies(byte[] ticket) {
    if (ticket.length < Ed25519.SIGNATURE_BYTES) {
      return false;
    }
    int signed = ticket.length - Ed25519.SIGNATURE_BYTES;
    return key().publicKey().verify(
        Digests.domainSha256(TicketService.SIGNATURE_DOMAIN, Arrays.copyOf(ticket, signed)),
        Arrays.copyOfRange(ticket, signed, ticket.length));
  }

  private static Case valid(String name, byte[] ticket, String verifyAs, String how) {
    return new Case(name, ticket, verifyAs, null, null, how);
  }

  private static Case reject(
      String name, byte[] ticket, String verifyAs, Cause cause, String code, String how) {
    return new Case(name, ticket, verifyAs, cause, code, how);
  }

  private interface Edit {
    void apply(byte[] ticket);
  }

  private static byte[] edit(byte[] ticket, Edit edit) {
    byte[] copy = ticket.clone();
    edit.apply(copy);
    return copy;
  }

  private static void putU16(byte[] ticket, int offset, int value) {
    ByteBuffer.wrap(ticket).order(ByteOrder.LITTLE_ENDIAN).putShort(offset, (short) value);
  }

  /** The ticket with S replaced by S + L: the same point equation holds, S is non-canonical. */
  static byte[] withSPlusL(byte[] ticket) {
    int sAt = ticket.length - 32;
    byte[] be = new byte[32];
    for (int i = 0; i < 32; i++) {
      be[i] = ticket[ticket.length - 1 - i];
    }
    byte[] sum = new BigInteger(1, be).add(L).toByteArray();
    byte[] out = ticket.clone();
    Arrays.fill(out, sAt, ticket.length, (byte) 0);
    // S < L < 2^253, so S + L < 2^254 fits the 32 bytes.
    for (int i = 0; i < sum.length && i < 32; i++) {
      out[sAt + i] = sum[sum.length - 1 - i];
    }
    return out;
  }
}
