package io.transit.flight.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.server.config.ConfigLoader;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import io.transit.flight.ticket.MetadataReference;
import io.transit.flight.ticket.TicketScope;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.TransitDefinition;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.Arrays;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.junit.jupiter.api.Test;

/**
 * The metadata-ticket digest check at DoGet. Every configuration change that alters what a
 * caller's catalog shows also changes its ticket scope or Table declaration, so end to end the
 * scope check refuses first (test_disclosure.py). The digest check guards what configuration
 * cannot show: a result encoding that changed between issue and redemption (another gateway
 * version behind the same key). This test issues, with the deployment's own key, a ticket whose
 * scope is current and whose digest is not, and one with the genuine digest as the control.
 */
class MetadataTicketDigestTest extends DaemonTestBase {

  @Test
  void aChangedCatalogResultIsRefusedAndTheGenuineDigestIsServed() throws Exception {
    FlightInfo info = client.getTables(null, null, null, null, false, gw.as("primitive", null));
    byte[] issued = info.getEndpoints().get(0).getTicket().getBytes();
    ByteBuffer b = ByteBuffer.wrap(issued).order(ByteOrder.LITTLE_ENDIAN);
    int n = Short.toUnsignedInt(b.getShort(146));
    byte[] command = Arrays.copyOfRange(issued, 148, 148 + n);
    byte[] digest = Arrays.copyOfRange(issued, 148 + n, 180 + n);
    long expiry = b.getLong(137);

    ResolvedConfig cfg = new ConfigLoader().load(gw.stateDir.resolve("gateway.json"));
    ResolvedConfig.Caller caller = cfg.callers().stream()
        .filter(c -> c.name().equals("primitive")).findFirst().orElseThrow();
    var declaration = cfg.publications().get(caller.publication()).declaration();
    StateDirectory state = new StateDirectory(cfg.stateDir(), new SecureRandom());
    Ed25519.KeyPair key = state.loadOrCreateKey(state.ticketKeyFile());
    TicketService tickets = new TicketService(key,
        TransitDefinition.of(cfg.realmName(), cfg.realm(), cfg.service()), Clock.systemUTC());
    TicketScope scope = new TicketScope(cfg.realm(), caller.principal(), cfg.service(),
        caller.bindingRevision(), cfg.ingress(), caller.requests(), declaration.getSource(),
        declaration.getObjectId(), caller.hasRole(), caller.role());
    byte[] fingerprint = DeclarationFingerprint.of(declaration);

    // Control: the same inputs re-issue the daemon's ticket byte for byte (signatures are
    // deterministic), and it is served.
    byte[] genuine = tickets.issue(scope, fingerprint, expiry, new MetadataReference(command, digest));
    assertArrayEquals(issued, genuine);
    try (FlightStream s = client.getStream(new Ticket(genuine), gw.as("primitive", null))) {
      long rows = 0;
      while (s.next()) {
        rows += s.getRoot().getRowCount();
      }
      assertEquals(1, rows);
    }

    byte[] stale = digest.clone();
    stale[0] ^= 1;
    byte[] changed = tickets.issue(scope, fingerprint, expiry, new MetadataReference(command, stale));
    JavaClientEndToEndTest.assertCode("FAILED_PRECONDITION", "catalog.changed", () -> {
      try (FlightStream s = client.getStream(new Ticket(changed), gw.as("primitive", null))) {
        while (s.next()) {
          // drain: the failure arrives as the stream's status
        }
      }
    });
  }
}
