package io.transit.flight.ticket;

import static io.transit.flight.ticket.TicketFixtures.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A ticket this service issued is recognised by its signed digest and signature, without
 * Ed25519's arithmetic; every other ticket is verified in full, and no verdict differs from full
 * verification (TicketService's class documentation).
 */
class TicketRecognitionTest {
  private static final int SIGNATURE_OFFSET_FROM_END = Ed25519.SIGNATURE_BYTES;

  @Test
  void aTicketIssuedHereVerifiesWithoutTheCurveArithmetic() {
    TicketService service = service();
    byte[] statementTicket = service.issue(scope(), declaration(), EXPIRY, statement());
    byte[] metadataTicket = service.issue(scope(), declaration(), EXPIRY, metadata(12));
    assertEquals(statement(), service.verify(statementTicket, scope(), declaration()).reference());
    service.verify(metadataTicket, scope(), declaration());
    // A reconnecting reader presents the same ticket again.
    service.verify(statementTicket, scope(), declaration());
    assertEquals(0, service.curveVerifications());
  }

  @Test
  void anotherReplicasTicketIsVerifiedInFull() {
    TicketService here = service();
    TicketService replica = service();
    byte[] ticket = replica.issue(scope(), declaration(), EXPIRY, statement());
    assertEquals(statement(), here.verify(ticket, scope(), declaration()).reference());
    assertEquals(1, here.curveVerifications());
  }

  @Test
  void aRememberedDigestWithAnyOtherSignatureIsVerifiedInFullAndRefused() {
    TicketService service = service();
    byte[] ticket = service.issue(scope(), declaration(), EXPIRY, statement());
    for (int i = 1; i <= SIGNATURE_OFFSET_FROM_END; i++) {
      byte[] altered = ticket.clone();
      altered[ticket.length - i] ^= 0x01;
      rejects(service, altered, scope(), Cause.INVALID_TICKET, "ticket.signature");
    }
    // The same signed bytes under another key: a valid signature, but not this deployment's.
    TicketService stranger =
        new TicketService(Ed25519.fromSeed(seed(100)), definition(), clockAt(EXPIRY - 1));
    byte[] foreign = stranger.issue(scope(), declaration(), EXPIRY, statement());
    rejects(service, foreign, scope(), Cause.INVALID_TICKET, "ticket.signature");
    assertEquals(SIGNATURE_OFFSET_FROM_END + 1, service.curveVerifications());
  }

  @Test
  void aRecognisedTicketStillFailsExpiryScopeAndDeclaration() {
    TicketService late = new TicketService(key(), definition(), clockAt(EXPIRY));
    byte[] ticket = late.issue(scope(), declaration(), EXPIRY, statement());
    rejects(late, ticket, scope(), Cause.TICKET_EXPIRED, "ticket.expired");

    TicketService service = service();
    byte[] current = service.issue(scope(), declaration(), EXPIRY, statement());
    rejects(service, current, TicketScope.withoutRole(REALM, 2, SERVICE, 4, 5, 6, 7, 8),
        Cause.TICKET_SCOPE, "ticket.scope");
    byte[] otherTable = service.issue(scope(), filled(0x5a), EXPIRY, statement());
    rejects(service, otherTable, scope(), Cause.TICKET_SCOPE, "ticket.declaration");
    assertEquals(0, late.curveVerifications() + service.curveVerifications());
  }

  @Test
  void theOldestTicketsAreForgottenAndThenVerifiedInFull() {
    TicketService service = service();
    List<byte[]> tickets = new ArrayList<>();
    for (int i = 0; i <= TicketService.ISSUED_CAPACITY; i++) {
      tickets.add(service.issue(scope(), declaration(), EXPIRY + i, statement()));
    }
    service.verify(tickets.get(tickets.size() - 1), scope(), declaration());
    assertEquals(0, service.curveVerifications());
    service.verify(tickets.get(0), scope(), declaration());
    assertEquals(1, service.curveVerifications(), "the first ticket was forgotten");
  }

  @Test
  void handlerThreadsIssueAndVerifyConcurrently() throws Exception {
    TicketService service = service();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Integer>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        long base = EXPIRY + t * 1_000L;
        done.add(pool.submit(() -> {
          int verified = 0;
          for (int i = 0; i < 100; i++) {
            byte[] ticket = service.issue(scope(), declaration(), base + i, statement());
            if (service.verify(ticket, scope(), declaration()).expiryMillis() == base + i) {
              verified++;
            }
          }
          return verified;
        }));
      }
      for (Future<Integer> f : done) {
        assertEquals(100, f.get(60, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
    assertEquals(0, service.curveVerifications());
  }
}
