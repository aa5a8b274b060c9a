package io.transit.flight.ticket;

import io.transit.flight.diagnostic.Fact;
import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.grpc.Status;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TicketServiceTest {

  @Test
  void statementTicketRoundTrips() {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    VerifiedTicket verified = service.verify(ticket, scope(), declaration());
    assertEquals(scope(), verified.scope());
    assertArrayEquals(declaration(), verified.declarationFingerprint());
    assertEquals(EXPIRY, verified.expiryMillis());
    assertEquals(statement(), verified.reference());
  }

  @Test
  void metadataTicketRoundTripsWithExactCommandBytes() {
    TicketService service = service();
    for (int n : new int[] {0, 1, 255, 256, 1019}) {
      byte[] ticket = service.issue(scope(), declaration(), EXPIRY, metadata(n));
      assertEquals(244 + n, ticket.length);
      MetadataReference ref =
          (MetadataReference) service.verify(ticket, scope(), declaration()).reference();
      assertArrayEquals(metadata(n).command(), ref.command());
      assertArrayEquals(metadata(n).resultSha256(), ref.resultSha256());
    }
  }

  @Test
  void issuingIsDeterministicAcrossReplicasSharingTheKey() {
    TicketService a = new TicketService(key(), definition(), clockAt(0));
    TicketService b = new TicketService(Ed25519.fromSeed(seed(0)), definition(), clockAt(99));
    assertArrayEquals(
        a.issue(scope(), declaration(), EXPIRY, statement()),
        b.issue(scope(), declaration(), EXPIRY, statement()));
  }

  @Test
  void everySingleByteFlipIsRejectedAsAnInvalidTicket() {
    TicketService service = service();
    byte[][] valid = {
      service.issue(scope(), declaration(), EXPIRY, statement()),
      service.issue(scope(), declaration(), EXPIRY, metadata(7)),
      service.issue(
          TicketScope.withoutRole(REALM, 2, SERVICE, 4, 5, 6, 7, 8),
          declaration(),
          EXPIRY,
          statement())
    };
    for (byte[] ticket : valid) {
      TicketScope scope = service.verify(ticket, scopeOf(ticket), declaration()).scope();
      for (int offset = 0; offset < ticket.length; offset++) {
        for (int mask : new int[] {0x01, 0x80, 0xFF}) {
          byte[] flipped = ticket.clone();
          flipped[offset] ^= (byte) mask;
          GatewayException e =
              assertThrows(
                  GatewayException.class,
                  () -> service.verify(flipped, scope, declaration()),
                  "offset " + offset + " mask " + mask);
          assertEquals(Cause.INVALID_TICKET, e.kind(), "offset " + offset);
          String where = "offset " + offset + " mask " + mask + ": " + e.getMessage();
          String expected = expectedFlipCode(offset);
          if (expected != null) {
            assertEquals(expected, e.code(), where);
          } else {
            assertTrue(Set.of("ticket.layout", "ticket.signature").contains(e.code()), where);
          }
        }
      }
    }
  }

  /** A flip in a structural byte may be a layout or a signature failure; elsewhere it is exact. */
  private static String expectedFlipCode(int offset) {
    if (offset < 32) {
      return "ticket.definition";
    }
    return isStructural(offset) ? null : "ticket.signature";
  }

  private static boolean isStructural(int offset) {
    // Role flag, role id (must be 0 without a role), tag, metadata command length.
    return offset == 96 || (offset >= 97 && offset < 105) || offset == 145
        || offset == 146 || offset == 147;
  }

  private static TicketScope scopeOf(byte[] ticket) {
    return ticket[96] == 0 ? TicketScope.withoutRole(REALM, 2, SERVICE, 4, 5, 6, 7, 8) : scope();
  }

  @Test
  void expiryIsExclusiveAtTheFixedClock() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, statement());
    TicketService before = new TicketService(key(), definition(), clockAt(EXPIRY - 1));
    assertEquals(EXPIRY, before.verify(ticket, scope(), declaration()).expiryMillis());

    for (long now : new long[] {EXPIRY, EXPIRY + 1, Long.MAX_VALUE}) {
      GatewayException e =
          rejects(
              new TicketService(key(), definition(), clockAt(now)),
              ticket,
              scope(),
              Cause.TICKET_EXPIRED,
              "ticket.expired");
      assertEquals(Status.Code.FAILED_PRECONDITION, e.kind().code());
      assertEquals(Fact.unsigned("expiry_unix_ms", EXPIRY), e.facts().get("expiry_unix_ms"));
    }
  }

  @Test
  void anInvalidClockReadingIsAClockFailureNotExpiry() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, statement());
    rejects(
        new TicketService(key(), definition(), clockAt(-1)),
        ticket, scope(), Cause.CLOCK, "ticket.clock");
    GatewayException e =
        rejects(
            new TicketService(key(), definition(), new FailingClock()),
            ticket, scope(), Cause.CLOCK, "ticket.clock");
    assertEquals(Status.Code.UNAVAILABLE, e.kind().code());
  }

  @Test
  void eachScopeFieldMismatchIsATicketScopeFailure() {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    TicketScope s = scope();
    Map<String, TicketScope> mismatches = new LinkedHashMap<>();
    mismatches.put("realm", new TicketScope(s.realm() + 1, s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource(), true, s.role()));
    mismatches.put("principal", new TicketScope(s.realm(), s.principal() + 1, s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource(), true, s.role()));
    mismatches.put("service", new TicketScope(s.realm(), s.principal(), s.service() + 1,
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource(), true, s.role()));
    mismatches.put("binding_revision", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision() + 1, s.ingress(), s.requests(), s.source(), s.resource(), true,
        s.role()));
    mismatches.put("ingress", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress() + 1, s.requests(), s.source(), s.resource(), true,
        s.role()));
    mismatches.put("requests", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests() + 1, s.source(), s.resource(), true,
        s.role()));
    mismatches.put("source", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source() + 1, s.resource(), true,
        s.role()));
    mismatches.put("resource", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource() + 1, true,
        s.role()));
    mismatches.put("role", new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource(), true,
        s.role() + 1));
    for (Map.Entry<String, TicketScope> m : mismatches.entrySet()) {
      GatewayException e = rejects(service, ticket, m.getValue(), Cause.TICKET_SCOPE, "ticket.scope");
      assertEquals(m.getKey(), e.facts().get("field"));
      assertEquals(Status.Code.PERMISSION_DENIED, e.kind().code());
    }
    // A role selected at issue but none now, and the reverse.
    TicketScope noRole = TicketScope.withoutRole(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource());
    assertEquals("role",
        rejects(service, ticket, noRole, Cause.TICKET_SCOPE, "ticket.scope").facts().get("field"));
    byte[] roleless = service.issue(noRole, declaration(), EXPIRY, statement());
    TicketScope roleZero = new TicketScope(s.realm(), s.principal(), s.service(),
        s.bindingRevision(), s.ingress(), s.requests(), s.source(), s.resource(), true, 0);
    assertEquals("role",
        rejects(service, roleless, roleZero, Cause.TICKET_SCOPE, "ticket.scope")
            .facts().get("field"));
  }

  @Test
  void anotherTableDeclarationIsATicketScopeFailure() {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    GatewayException e =
        assertThrows(
            GatewayException.class, () -> service.verify(ticket, scope(), filled(0xD1)));
    assertEquals(Cause.TICKET_SCOPE, e.kind());
    assertEquals("ticket.declaration", e.code());
  }

  @Test
  void anotherKeyIsASignatureFailure() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, statement());
    TicketService rotated =
        new TicketService(Ed25519.fromSeed(seed(100)), definition(), clockAt(EXPIRY - 1));
    GatewayException e = rejects(rotated, ticket, scope(), Cause.INVALID_TICKET, "ticket.signature");
    assertEquals(Status.Code.INVALID_ARGUMENT, e.kind().code());
  }

  @Test
  void anotherDefinitionIsADefinitionFailure() {
    byte[] ticket = service().issue(scope(), declaration(), EXPIRY, statement());
    for (TransitDefinition other :
        new TransitDefinition[] {
          TransitDefinition.of("demo-realm-2", REALM, SERVICE),
          TransitDefinition.of("demo-realm", REALM + 1, SERVICE),
          TransitDefinition.of("demo-realm", REALM, SERVICE + 1)
        }) {
      // Same key: only the definition differs, and it is checked before the signature.
      rejects(new TicketService(key(), other, clockAt(EXPIRY - 1)), ticket, scope(),
          Cause.INVALID_TICKET, "ticket.definition");
    }
  }

  @Test
  void checksRunInTheDocumentedOrder() {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    TicketScope wrongScope = TicketScope.withoutRole(REALM, 0, SERVICE, 0, 0, 0, 0, 0);
    TicketService late = new TicketService(key(), definition(), clockAt(EXPIRY));
    TicketService badClock = new TicketService(key(), definition(), clockAt(-5));
    TicketService otherKey = new TicketService(Ed25519.fromSeed(seed(9)), definition(), clockAt(0));

    // Signature before expiry; expiry before scope; clock before scope; scope before declaration.
    assertEquals("ticket.signature",
        assertThrows(GatewayException.class, () -> otherKey.verify(ticket, wrongScope, filled(1)))
            .code());
    assertEquals("ticket.expired",
        assertThrows(GatewayException.class, () -> late.verify(ticket, wrongScope, filled(1)))
            .code());
    assertEquals("ticket.clock",
        assertThrows(GatewayException.class, () -> badClock.verify(ticket, wrongScope, filled(1)))
            .code());
    assertEquals("ticket.scope",
        assertThrows(GatewayException.class, () -> service.verify(ticket, wrongScope, filled(1)))
            .code());
    // Definition before signature: another definition and another key report the definition.
    TicketService both = new TicketService(Ed25519.fromSeed(seed(9)),
        TransitDefinition.of("elsewhere", REALM, SERVICE), clockAt(0));
    assertEquals("ticket.definition",
        assertThrows(GatewayException.class, () -> both.verify(ticket, scope(), declaration()))
            .code());
  }

  @Test
  void issueRefusesInputsNoValidTicketCarries() {
    TicketService service = service();
    assertThrows(IllegalArgumentException.class,
        () -> service.issue(scope(), declaration(), -1, statement()));
    assertThrows(IllegalArgumentException.class,
        () -> service.issue(scope(), new byte[31], EXPIRY, statement()));
    assertThrows(IllegalArgumentException.class,
        () -> new StatementReference(1, new byte[33]));
    assertThrows(IllegalArgumentException.class,
        () -> service.issue(TicketScope.withoutRole(REALM + 1, 2, SERVICE, 4, 5, 6, 7, 8),
            declaration(), EXPIRY, statement()));
    assertThrows(IllegalArgumentException.class,
        () -> service.issue(TicketScope.withoutRole(REALM, 2, SERVICE + 1, 4, 5, 6, 7, 8),
            declaration(), EXPIRY, statement()));
  }

  @Test
  void referencesAreImmutableCopies() {
    byte[] digest = filled(0x11);
    byte[] command = {1, 2, 3};
    MetadataReference ref = new MetadataReference(command, digest);
    command[0] = 9;
    digest[0] = 9;
    ref.command()[1] = 9;
    assertArrayEquals(new byte[] {1, 2, 3}, ref.command());
    assertArrayEquals(filled(0x11), ref.resultSha256());
    assertEquals(Set.of(ref), Set.of(new MetadataReference(new byte[] {1, 2, 3}, filled(0x11))));
  }

  /** A clock whose reading fails, as a misconfigured custom clock would. */
  private static final class FailingClock extends Clock {
    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      throw new DateTimeException("no time source");
    }
  }
}
