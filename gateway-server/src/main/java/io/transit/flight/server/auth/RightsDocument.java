package io.transit.flight.server.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.io.IOException;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * The rights a deployment file declares, as the document the journal records ({@link
 * io.transit.flight.nativequery.RightsLedger}): per caller its name, principal, publication,
 * role, credential epoch and the SHA-256 of its principal's public key (what the rights are
 * granted to) and its three rights. Credentials and keys are not in it: they stay in each
 * replica's files. The encoding is canonical (callers sorted by name, fixed
 * member order), so equal rights give equal bytes and a reload of unchanged rights records
 * nothing. Stateless; any thread.
 */
final class RightsDocument {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int VERSION = 1;

  /**
   * One caller's entry. {@code credentialEpoch} and {@code keySha256} (hex) are null in a
   * document recorded before they were written there (both 2026-12-07).
   */
  record Entry(String name, long principal, String publication, boolean hasRole, long role,
      Long credentialEpoch, String keySha256, boolean send, boolean inspect, boolean read) {

    /**
     * Whether {@code local} (this replica's binding) is what the entry grants rights to: the
     * same principal, publication and role, under the same credential epoch. The epoch counts
     * because a reload that rotates a credential and restores a right in one file, and whose
     * record is in the journal though this replica did not install it (its outcome unknown, or
     * another replica's reload), must not give the right to the credential it retired.
     */
    boolean grantsTo(CallerBinding local) {
      return principal == local.principal() && publication.equals(local.publication())
          && hasRole == local.hasRole() && (!hasRole || role == local.role())
          && (credentialEpoch == null || credentialEpoch == local.credentialEpoch())
          // Another replica's key for the principal (a start or reload racing this one's check,
          // PrincipalKeys) signs another admission stream: refused, not served.
          && (keySha256 == null || keySha256.equals(keyDigest(local.principalKey())));
    }
  }

  /** A principal key's identity in the document: the hex SHA-256 of its public key. */
  static String keyDigest(Ed25519.KeyPair key) {
    return HexFormat.of().formatHex(Digests.sha256(key.publicKey().encoded()));
  }

  private RightsDocument() {}

  static byte[] encode(Collection<CallerBinding> bindings) {
    ObjectNode root = JSON.createObjectNode();
    root.put("version", VERSION);
    ArrayNode callers = root.putArray("callers");
    bindings.stream().sorted(Comparator.comparing(CallerBinding::name)).forEach(b -> {
      ObjectNode c = callers.addObject();
      c.put("name", b.name());
      c.put("principal", Long.toUnsignedString(b.principal()));
      c.put("publication", b.publication());
      c.put("role", b.hasRole() ? Long.toUnsignedString(b.role()) : "");
      c.put("credential_epoch", Long.toUnsignedString(b.credentialEpoch()));
      c.put("principal_key_sha256", keyDigest(b.principalKey()));
      c.put("send", b.canSend());
      c.put("inspect", b.canInspect());
      c.put("read", b.canRead());
    });
    try {
      return JSON.writeValueAsBytes(root);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The entries by caller name; none for the empty document (nothing recorded yet). A document
   * this gateway cannot read fails UNAVAILABLE like an unreadable journal: no decision is made on
   * rights it does not understand.
   */
  static Map<String, Entry> decode(byte[] document) {
    if (document.length == 0) {
      return Map.of();
    }
    try {
      JsonNode root = JSON.readTree(document);
      if (root == null || root.path("version").asInt() != VERSION) {
        throw new IOException("unknown rights document version");
      }
      Map<String, Entry> out = new HashMap<>();
      for (JsonNode c : (Iterable<JsonNode>) () -> root.path("callers").elements()) {
        String role = c.path("role").asText();
        Entry e = new Entry(c.path("name").asText(),
            Long.parseUnsignedLong(c.path("principal").asText()), c.path("publication").asText(),
            !role.isEmpty(), role.isEmpty() ? 0 : Long.parseUnsignedLong(role),
            c.has("credential_epoch")
                ? Long.parseUnsignedLong(c.path("credential_epoch").asText()) : null,
            c.has("principal_key_sha256") ? c.path("principal_key_sha256").asText() : null,
            c.path("send").asBoolean(), c.path("inspect").asBoolean(),
            c.path("read").asBoolean());
        out.put(e.name(), e);
      }
      return Map.copyOf(out);
    } catch (IOException | RuntimeException e) {
      throw new GatewayException(Cause.TRANSPORT, "query.journal_unavailable",
          "the journal's rights document cannot be read", e);
    }
  }
}
