package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class Ftk1LayoutTest {

  @Test
  void statementTicketFieldsSitAtTheirDocumentedOffsets() {
    TicketScope scope = scope();
    byte[] ticket = service().issue(scope, declaration(), EXPIRY, statement());

    assertEquals(250, ticket.length);
    assertArrayEquals(definition().digest(), Arrays.copyOfRange(ticket, 0, 32));
    long[] fields = {
      scope.realm(), scope.principal(), scope.service(), scope.bindingRevision(),
      scope.ingress(), scope.requests(), scope.source(), scope.resource()
    };
    for (int i = 0; i < fields.length; i++) {
      assertEquals(fields[i], u64(ticket, 32 + 8 * i), "scope field " + i);
    }
    // Little endian: the realm 0x0102030405060708 starts with its low byte.
    assertArrayEquals(
        new byte[] {8, 7, 6, 5, 4, 3, 2, 1}, Arrays.copyOfRange(ticket, 32, 40));
    assertEquals(1, ticket[96]);
    assertEquals(scope.role(), u64(ticket, 97));
    assertArrayEquals(declaration(), Arrays.copyOfRange(ticket, 105, 137));
    assertEquals(EXPIRY, u64(ticket, 137));
    assertEquals(1, ticket[145]);
    assertEquals(statement().correlation(), u64(ticket, 146));
    assertArrayEquals(statement().manifestSha256(), Arrays.copyOfRange(ticket, 154, 186));

    byte[] signature = Arrays.copyOfRange(ticket, 186, 250);
    byte[] message =
        Digests.domainSha256("transit.flight.ticket.v1", Arrays.copyOf(ticket, 186));
    assertEquals(true, key().publicKey().verify(message, signature));
  }

  @Test
  void metadataTicketFieldsSitAtTheirDocumentedOffsets() {
    MetadataReference ref = metadata(37);
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, ref);

    assertEquals(244 + 37, ticket.length);
    assertEquals(2, ticket[145]);
    assertEquals(37, ByteBuffer.wrap(ticket).order(ByteOrder.LITTLE_ENDIAN).getShort(146));
    assertArrayEquals(new byte[] {37, 0}, Arrays.copyOfRange(ticket, 146, 148));
    assertArrayEquals(ref.command(), Arrays.copyOfRange(ticket, 148, 148 + 37));
    assertArrayEquals(ref.resultSha256(), Arrays.copyOfRange(ticket, 185, 217));
    byte[] message =
        Digests.domainSha256("transit.flight.ticket.v1", Arrays.copyOf(ticket, 217));
    assertEquals(
        true, key().publicKey().verify(message, Arrays.copyOfRange(ticket, 217, 281)));
  }

  @Test
  void absentRoleIsFlagZeroAndRoleZero() {
    TicketScope scope =
        TicketScope.withoutRole(REALM, 2, SERVICE, 4, 5, 6, 7, 8);
    byte[] ticket = service().issue(scope, declaration(), EXPIRY, statement());
    assertEquals(0, ticket[96]);
    assertEquals(0L, u64(ticket, 97));
    assertThrows(
        IllegalArgumentException.class,
        () -> new TicketScope(REALM, 2, SERVICE, 4, 5, 6, 7, 8, false, 9));
  }

  @Test
  void sizeConstantsMatchTheProfile() {
    assertEquals(250, Ftk1Layout.STATEMENT_TICKET_BYTES);
    assertEquals(244, Ftk1Layout.METADATA_TICKET_BASE_BYTES);
    assertEquals(244, Ftk1Layout.MIN_TICKET_BYTES);
    assertEquals(1263, Ftk1Layout.MAX_TICKET_BYTES);
    assertEquals(1019, Ftk1Layout.MAX_METADATA_COMMAND_BYTES);
  }

  @Test
  void largestCommandGivesTheMaximumTicketAndOneMoreIsRefusedAtIssue() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, metadata(1019));
    assertEquals(1263, ticket.length);
    assertEquals(metadata(1019), service().verify(ticket, scope(), declaration()).reference());

    assertThrows(IllegalArgumentException.class, () -> metadata(1020));
    assertThrows(IllegalArgumentException.class, () -> metadata(1024));
  }

  @Test
  void emptyCommandGivesTheSmallestTicket() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, metadata(0));
    assertEquals(244, ticket.length);
    assertEquals(metadata(0), service().verify(ticket, scope(), declaration()).reference());
  }

  @Test
  void sizeIsCheckedFirst() {
    TicketService service = service();
    rejects(service, null, scope(), Cause.INVALID_TICKET, "ticket.size");
    for (int size : new int[] {0, 1, 243, 1264, 4096}) {
      // Content that would otherwise be a layout failure: only the size is reported.
      byte[] junk = new byte[size];
      Arrays.fill(junk, (byte) 0xFF);
      rejects(service, junk, scope(), Cause.INVALID_TICKET, "ticket.size");
    }
  }

  @Test
  void truncatedOrExtendedTicketsAreRejected() {
    TicketService service = service();
    byte[] statement = service.issue(scope(), declaration(), EXPIRY, statement());
    byte[] meta = service.issue(scope(), declaration(), EXPIRY, metadata(100));
    for (byte[] valid : new byte[][] {statement, meta}) {
      for (int length = 0; length < valid.length; length++) {
        String code = length < 244 ? "ticket.size" : "ticket.layout";
        rejects(service, Arrays.copyOf(valid, length), scope(), Cause.INVALID_TICKET, code);
      }
      for (int extra = 1; valid.length + extra <= 1263; extra += 97) {
        byte[] longer = Arrays.copyOf(valid, valid.length + extra);
        rejects(service, longer, scope(), Cause.INVALID_TICKET, "ticket.layout");
      }
      byte[] tooLong = Arrays.copyOf(valid, 1264);
      rejects(service, tooLong, scope(), Cause.INVALID_TICKET, "ticket.size");
    }
  }

  @Test
  void roleFlagTwoIsRejectedEvenWhenSigned() {
    TicketService service = service();
    byte[] valid = service.issue(scope(), declaration(), EXPIRY, statement());
    byte[] forged = resigned(valid, key(), t -> t[96] = 2);
    rejects(service, forged, scope(), Cause.INVALID_TICKET, "ticket.layout");
    rejects(service, resigned(valid, key(), t -> t[96] = (byte) 0xFF), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
  }

  @Test
  void roleIdWithoutRoleIsRejectedEvenWhenSigned() {
    TicketService service = service();
    TicketScope scope = TicketScope.withoutRole(REALM, 2, SERVICE, 4, 5, 6, 7, 8);
    byte[] valid = service.issue(scope, declaration(), EXPIRY, statement());
    byte[] forged = resigned(valid, key(), t -> t[104] = 1);
    rejects(service, forged, scope, Cause.INVALID_TICKET, "ticket.layout");
  }

  @Test
  void unknownTagIsRejectedEvenWhenSigned() {
    TicketService service = service();
    byte[] valid = service.issue(scope(), declaration(), EXPIRY, statement());
    for (int tag : new int[] {0, 3, 0x7F, 0x80, 0xFF}) {
      byte[] forged = resigned(valid, key(), t -> t[145] = (byte) tag);
      rejects(service, forged, scope(), Cause.INVALID_TICKET, "ticket.layout");
    }
  }

  @Test
  void tagAndLengthMustAgree() {
    TicketService service = service();
    byte[] statement = service.issue(scope(), declaration(), EXPIRY, statement());
    byte[] meta = service.issue(scope(), declaration(), EXPIRY, metadata(100));
    // A statement ticket relabelled as metadata: its "command length" does not give 250 bytes.
    rejects(service, resigned(statement, key(), t -> t[145] = 2), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
    // A metadata ticket relabelled as a statement: 344 bytes is not 250.
    rejects(service, resigned(meta, key(), t -> t[145] = 1), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
    // A command length off by one either way.
    rejects(service, resigned(meta, key(), t -> t[146] = 101), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
    rejects(service, resigned(meta, key(), t -> t[146] = 99), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
    // A length above the maximum command, in the high byte.
    rejects(service, resigned(meta, key(), t -> t[147] = 0x04), scope(),
        Cause.INVALID_TICKET, "ticket.layout");
  }

  @Test
  void signatureCoversEveryPrecedingByteUnderTheTicketDomain() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, metadata(5));
    int signed = ticket.length - Ed25519.SIGNATURE_BYTES;
    byte[] expected =
        key()
            .sign(
                Digests.sha256(
                    concat("transit.flight.ticket.v1\0".getBytes(), Arrays.copyOf(ticket, signed))));
    assertArrayEquals(expected, Arrays.copyOfRange(ticket, signed, ticket.length));
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
