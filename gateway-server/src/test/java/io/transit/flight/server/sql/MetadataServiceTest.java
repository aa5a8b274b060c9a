package io.transit.flight.server.sql;

import static io.transit.flight.server.TestBindings.caller;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.Any;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.catalog.SqlInfoCatalog;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.embedded.EmbeddedEngine;
import io.transit.flight.nativequery.embedded.PlanCache;
import io.transit.flight.server.Bindings;
import io.transit.flight.server.TestBindings;
import io.transit.flight.server.auth.AuthSnapshot;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.stream.LoopbackStreams;
import io.transit.flight.ticket.VerifiedTicket;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetTables;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Catalog metadata from GetFlightInfo to DoGet with the real catalog, ticket service,
 * authorization, embedded engine and streaming core over loopback: the ticket streams the result
 * it was issued for, a revocation before issue refuses the ticket and the count, a Table the
 * engine denies is neither listed nor counted, a revocation after issue ends the stream before
 * any batch, and nothing stays allocated.
 */
class MetadataServiceTest {
  private static final Any GET_TABLES = Any.pack(CommandGetTables.getDefaultInstance());

  @TempDir Path dir;
  private EmbeddedEngine engine;
  private LoopbackStreams loopback;
  private TestBindings bindings;
  private ResolvedConfig cfg;
  private TestBindings.Served served;
  private Authorization authorization;
  private MetadataService metadata;
  private CallerBinding caller;

  @BeforeEach
  void start() throws Exception {
    loopback = new LoopbackStreams();
    bindings = new TestBindings(dir);
    bindings.writeData(3);
    cfg = bindings.config(3, caller("a", 10, true));
    AuthSnapshot snapshot = bindings.snapshot(cfg);
    engine = EmbeddedEngine.open(dir.resolve("engine"), Bindings.engineOptions(cfg),
        Bindings.publications(cfg), snapshot.rights(), PlanCache.withDefaults());
    served = bindings.serve(cfg, snapshot, "a", engine);
    authorization = served.authorization();
    caller = served.caller();
    metadata = new MetadataService(new CatalogResults(new SqlInfoCatalog("test", "18.3.0")),
        served.tickets(), authorization, engine, loopback.handler, loopback.gatewayRoot,
        cfg.limits());
  }

  @AfterEach
  void stop() throws Exception {
    try {
      loopback.close();
    } finally {
      engine.close();
    }
  }

  private FlightInfo tables() {
    return metadata.getFlightInfo(GET_TABLES, FlightDescriptor.command(GET_TABLES.toByteArray()),
        caller);
  }

  private VerifiedTicket verified(FlightInfo info) {
    return served.verify(info.getEndpoints().get(0).getTicket().getBytes());
  }

  @Test
  void ticketStreamsTheCatalogResultItWasIssuedFor() throws Exception {
    FlightInfo info = tables();
    VerifiedTicket ticket = verified(info);
    LoopbackStreams.Seen seen = loopback.read(ch -> metadata.stream(ch, caller, ticket));
    assertNull(seen.error());
    assertEquals(1, info.getRecords(), "the caller's one published Table");
    assertEquals(info.getRecords(), seen.rows());
    assertEquals(List.of("c"), seen.firsts(), "catalog_name of the published Table");
  }

  @Test
  void readRightRevokedAfterIssueEndsTheStreamWithoutTheBatch() throws Exception {
    FlightInfo info = tables();
    VerifiedTicket ticket = verified(info);
    authorization.install(bindings.next(cfg, bindings.config(3, caller("a", 10, false))));
    LoopbackStreams.Seen seen = loopback.read(ch -> metadata.stream(ch, caller, ticket));
    assertEquals(List.of(), seen.firsts());
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code());
  }

  @Test
  void readRightRevokedBeforeGetFlightInfoIsRefusedBeforeAnyTicketOrCount() throws Exception {
    authorization.install(bindings.next(cfg, bindings.config(3, caller("a", 10, false))));
    GatewayException e = assertThrows(GatewayException.class, this::tables);
    assertEquals(Cause.ACCESS_DENIED, e.kind());
    assertEquals("access.read_revoked", e.code());
  }

  /**
   * The engine's source/requester check alone refusing (its rights lag the gateway's, as
   * between the two steps of a reload): the Table is neither listed nor counted, and the ticket
   * streams that empty listing.
   */
  @Test
  void tableTheEngineDeniesIsNeitherListedNorCounted() throws Exception {
    long listed = tables().getRecords();
    engine.updateRights(bindings.next(cfg, bindings.config(3, caller("a", 10, false))).rights());
    FlightInfo info = tables();
    assertEquals(1, listed);
    assertEquals(0, info.getRecords(), "not counted");
    VerifiedTicket ticket = verified(info);
    LoopbackStreams.Seen seen = loopback.read(ch -> metadata.stream(ch, caller, ticket));
    assertNull(seen.error());
    assertEquals(0, seen.rows(), "not listed");
  }
}
