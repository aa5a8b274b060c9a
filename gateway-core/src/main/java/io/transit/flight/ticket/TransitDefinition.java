package io.transit.flight.ticket;

import io.transit.flight.crypto.Digests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The deployment's 32-byte Transit definition: the first field of every FTK1 ticket and the
 * ticket format's only version identifier. Two deployments accept each other's tickets only if
 * their definitions are byte-equal; a change to any input (or to the ticket contract version)
 * makes every earlier ticket fail with {@code ticket.definition}.
 *
 * <p>The digest is {@code SHA-256("transit.flight.definition.v1\0" ‖ encoding)} where the
 * canonical encoding is, little endian:
 *
 * <pre>
 *   u16 realm name length, realm name (printable ASCII, 1..128 bytes)
 *   u64 realm id
 *   u64 service id
 *   u16 contract length, contract version ("FTK1")
 * </pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class TransitDefinition {
  /** The ticket contract version this code reads and writes; no earlier layout is decoded. */
  public static final String TICKET_CONTRACT_VERSION = "FTK1";

  static final String DOMAIN = "transit.flight.definition.v1";
  static final int MAX_REALM_NAME_BYTES = 128;

  private final String realmName;
  private final long realmId;
  private final long serviceId;
  private final byte[] digest;

  private TransitDefinition(String realmName, long realmId, long serviceId) {
    this.realmName = realmName;
    this.realmId = realmId;
    this.serviceId = serviceId;
    this.digest = Digests.domainSha256(DOMAIN, encode(realmName, realmId, serviceId));
  }

  /**
   * The definition of a deployment from its config values.
   *
   * @param realmName the realm's configured name, printable ASCII, 1..128 characters
   * @param realmId the realm's u64 id (the ticket's realm scope field)
   * @param serviceId this gateway service's u64 id (the ticket's service scope field)
   */
  public static TransitDefinition of(String realmName, long realmId, long serviceId) {
    checkRealmName(realmName);
    return new TransitDefinition(realmName, realmId, serviceId);
  }

  /** The 32-byte digest written at offset 0 of every ticket (a copy). */
  public byte[] digest() {
    return digest.clone();
  }

  /** The digest in lowercase hex, for logs and operator tools. */
  public String hex() {
    return Digests.hex(digest);
  }

  public String realmName() {
    return realmName;
  }

  public long realmId() {
    return realmId;
  }

  public long serviceId() {
    return serviceId;
  }

  /** Constant-time comparison with the definition read from a ticket. */
  boolean matches(byte[] candidate) {
    return MessageDigest.isEqual(digest, candidate);
  }

  static byte[] encode(String realmName, long realmId, long serviceId) {
    byte[] name = realmName.getBytes(StandardCharsets.US_ASCII);
    byte[] contract = TICKET_CONTRACT_VERSION.getBytes(StandardCharsets.US_ASCII);
    return ByteBuffer.allocate(2 + name.length + 8 + 8 + 2 + contract.length)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putShort((short) name.length)
        .put(name)
        .putLong(realmId)
        .putLong(serviceId)
        .putShort((short) contract.length)
        .put(contract)
        .array();
  }

  /**
   * Refuses a realm name the ticket definition cannot carry: 1..128 printable ASCII characters
   * (the configuration's check, so a start never meets it after the engine opened).
   */
  public static void checkRealmName(String realmName) {
    if (realmName == null
        || realmName.isEmpty()
        || realmName.length() > MAX_REALM_NAME_BYTES
        || !realmName.chars().allMatch(c -> c >= 0x20 && c < 0x7f)) {
      throw new IllegalArgumentException(
          "realm name: "
              + (realmName == null ? "null" : realmName.length() + " chars")
              + " (expected: 1.."
              + MAX_REALM_NAME_BYTES
              + " printable ASCII characters)");
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TransitDefinition other && MessageDigest.isEqual(digest, other.digest);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(digest);
  }

  @Override
  public String toString() {
    return "TransitDefinition[" + hex() + "]";
  }
}
