package io.transit.flight.ticket;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The FTK1 byte layout: offsets, sizes, encoding and strict parsing. No cryptography and no
 * policy here; {@link TicketService} signs, verifies and checks scope. All integers are little
 * endian and there is no magic: the leading 32-byte Transit definition identifies the layout.
 *
 * <pre>
 *   0  32  Transit definition
 *  32   8  realm            40   8  principal        48   8  service
 *  56   8  binding revision 64   8  ingress          72   8  requests
 *  80   8  source           88   8  resource
 *  96   1  selected-role flag (0 or 1)
 *  97   8  role id (0 when the flag is 0)
 * 105  32  Table source declaration fingerprint
 * 137   8  expiry, Unix milliseconds
 * 145   1  tag
 * tag 1: 146 8 native correlation, 154 32 manifest SHA-256, 186 64 signature  (250 bytes)
 * tag 2: 146 2 command length n, 148 n command, 148+n 32 result SHA-256,
 *        180+n 64 signature                                                   (244+n bytes)
 * </pre>
 *
 * <p>Stateless; every method is safe from any thread.
 */
public final class Ftk1Layout {
  public static final int DIGEST_BYTES = 32;
  public static final int DEFINITION_OFFSET = 0;
  public static final int SCOPE_OFFSET = 32;
  public static final int ROLE_FLAG_OFFSET = 96;
  public static final int ROLE_OFFSET = 97;
  public static final int DECLARATION_OFFSET = 105;
  public static final int EXPIRY_OFFSET = 137;
  public static final int TAG_OFFSET = 145;
  public static final int REFERENCE_OFFSET = 146;

  public static final int STATEMENT_TICKET_BYTES =
      REFERENCE_OFFSET + 8 + DIGEST_BYTES + Ed25519.SIGNATURE_BYTES;
  /** A metadata ticket is this many bytes plus its command length. */
  public static final int METADATA_TICKET_BASE_BYTES =
      REFERENCE_OFFSET + 2 + DIGEST_BYTES + Ed25519.SIGNATURE_BYTES;
  public static final int MAX_TICKET_BYTES = 1263;
  /** The smallest valid ticket: a metadata ticket with an empty command. */
  public static final int MIN_TICKET_BYTES =
      Math.min(STATEMENT_TICKET_BYTES, METADATA_TICKET_BASE_BYTES);
  /** The profile's own bound on command bytes; never reached because of {@link #MAX_TICKET_BYTES}. */
  public static final int PROFILE_MAX_COMMAND_BYTES = 1024;
  /** The largest command that fits: 1263 - 244 = 1019. */
  public static final int MAX_METADATA_COMMAND_BYTES =
      Math.min(PROFILE_MAX_COMMAND_BYTES, MAX_TICKET_BYTES - METADATA_TICKET_BASE_BYTES);

  private Ftk1Layout() {}

  /** The fields of a ticket whose layout parsed; nothing in it has been verified yet. */
  record Parsed(
      byte[] definition,
      TicketScope scope,
      byte[] declarationFingerprint,
      long expiryMillis,
      TicketReference reference,
      int signedLength) {}

  /** The exact size of a ticket carrying {@code reference}: 250, or 244 + command length. */
  public static int ticketBytes(TicketReference reference) {
    if (reference instanceof MetadataReference m) {
      return METADATA_TICKET_BASE_BYTES + m.commandLength();
    }
    return STATEMENT_TICKET_BYTES;
  }

  /**
   * Encodes every field and leaves the trailing 64 signature bytes zero; the caller signs bytes
   * {@code [0, length - 64)} and writes the signature there.
   */
  static byte[] encodeUnsigned(
      byte[] definition,
      TicketScope scope,
      byte[] declarationFingerprint,
      long expiryMillis,
      TicketReference reference) {
    int size = ticketBytes(reference);
    ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    out.put(requireDigest("definition", definition));
    out.putLong(scope.realm())
        .putLong(scope.principal())
        .putLong(scope.service())
        .putLong(scope.bindingRevision())
        .putLong(scope.ingress())
        .putLong(scope.requests())
        .putLong(scope.source())
        .putLong(scope.resource());
    out.put((byte) (scope.hasRole() ? 1 : 0)).putLong(scope.role());
    out.put(requireDigest("declarationFingerprint", declarationFingerprint));
    out.putLong(expiryMillis);
    out.put((byte) reference.tag());
    // Java 17 has no pattern switch; the interface is sealed, so these two cases are all.
    if (reference instanceof StatementReference s) {
      out.putLong(s.correlation()).put(s.manifestSha256());
    } else {
      MetadataReference m = (MetadataReference) reference;
      out.putShort((short) m.commandLength()).put(m.command()).put(m.resultSha256());
    }
    if (out.remaining() != Ed25519.SIGNATURE_BYTES) {
      throw new IllegalStateException("FTK1 encoder wrote " + out.position() + " of " + size);
    }
    return out.array();
  }

  /**
   * Whether {@code ticket}'s tag byte names a statement result (nothing else is read or checked:
   * the caller's own bytes, looked at before verification to know which rights redeeming it
   * needs).
   */
  public static boolean namesStatement(byte[] ticket) {
    return ticket.length > TAG_OFFSET
        && Byte.toUnsignedInt(ticket[TAG_OFFSET]) == StatementReference.TAG;
  }

  /**
   * Parses {@code ticket} strictly: size first, then tag, then the exact length that tag
   * implies, the role flag and the absent-role rule.
   *
   * @throws GatewayException {@link Cause#INVALID_TICKET} with {@code ticket.size} or {@code
   *     ticket.layout}
   */
  static Parsed parse(byte[] ticket) {
    checkSize(ticket);
    ByteBuffer in = ByteBuffer.wrap(ticket).order(ByteOrder.LITTLE_ENDIAN);
    int tag = Byte.toUnsignedInt(ticket[TAG_OFFSET]);
    TicketReference reference;
    if (tag == StatementReference.TAG) {
      requireLength(ticket, STATEMENT_TICKET_BYTES);
      reference =
          new StatementReference(
              in.getLong(REFERENCE_OFFSET), slice(ticket, REFERENCE_OFFSET + 8, DIGEST_BYTES));
    } else if (tag == MetadataReference.TAG) {
      int n = Short.toUnsignedInt(in.getShort(REFERENCE_OFFSET));
      if (n > MAX_METADATA_COMMAND_BYTES) {
        throw layout("ticket command length " + n + " exceeds " + MAX_METADATA_COMMAND_BYTES);
      }
      requireLength(ticket, METADATA_TICKET_BASE_BYTES + n);
      reference =
          new MetadataReference(
              slice(ticket, REFERENCE_OFFSET + 2, n),
              slice(ticket, REFERENCE_OFFSET + 2 + n, DIGEST_BYTES));
    } else {
      throw layout("ticket tag " + tag + " is not 1 or 2");
    }
    int flag = Byte.toUnsignedInt(ticket[ROLE_FLAG_OFFSET]);
    long role = in.getLong(ROLE_OFFSET);
    if (flag > 1) {
      throw layout("ticket role flag " + flag + " is not 0 or 1");
    }
    if (flag == 0 && role != 0) {
      throw layout("ticket role id is set without a role");
    }
    int p = SCOPE_OFFSET;
    TicketScope scope =
        new TicketScope(
            in.getLong(p),
            in.getLong(p + 8),
            in.getLong(p + 16),
            in.getLong(p + 24),
            in.getLong(p + 32),
            in.getLong(p + 40),
            in.getLong(p + 48),
            in.getLong(p + 56),
            flag == 1,
            role);
    return new Parsed(
        slice(ticket, DEFINITION_OFFSET, DIGEST_BYTES),
        scope,
        slice(ticket, DECLARATION_OFFSET, DIGEST_BYTES),
        in.getLong(EXPIRY_OFFSET),
        reference,
        ticket.length - Ed25519.SIGNATURE_BYTES);
  }

  private static void checkSize(byte[] ticket) {
    int size = ticket == null ? 0 : ticket.length;
    if (size < MIN_TICKET_BYTES || size > MAX_TICKET_BYTES) {
      throw new GatewayException(
          Cause.INVALID_TICKET,
          "ticket.size",
          "ticket size " + size + " outside " + MIN_TICKET_BYTES + ".." + MAX_TICKET_BYTES);
    }
  }

  private static void requireLength(byte[] ticket, int expected) {
    if (ticket.length != expected) {
      throw layout("ticket length " + ticket.length + " but its tag needs " + expected);
    }
  }

  private static GatewayException layout(String message) {
    return new GatewayException(Cause.INVALID_TICKET, "ticket.layout", message);
  }

  private static byte[] slice(byte[] bytes, int offset, int length) {
    return Arrays.copyOfRange(bytes, offset, offset + length);
  }

  private static byte[] requireDigest(String name, byte[] digest) {
    if (digest == null || digest.length != DIGEST_BYTES) {
      throw new IllegalArgumentException(
          name
              + ": "
              + (digest == null ? "null" : digest.length + " bytes")
              + " (expected: "
              + DIGEST_BYTES
              + " bytes)");
    }
    return digest;
  }

  /** A defensive copy of a 32-byte digest, refusing any other length. */
  static byte[] digestCopy(String name, byte[] digest) {
    return requireDigest(name, digest).clone();
  }
}
