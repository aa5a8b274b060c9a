package io.transit.flight.server.sql;

import static io.transit.flight.server.TestBindings.caller;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.google.protobuf.Any;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.catalog.SqlInfoCatalog;
import io.transit.flight.server.TestBindings;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.flight.LoopbackStreams;
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
 * authorization and streaming core over loopback: the ticket streams the result it was issued
 * for, a revocation after issue ends the stream before any batch, and nothing stays allocated.
 */
class MetadataServiceTest {
  private static final Any GET_TABLES = Any.pack(CommandGetTables.getDefaultInstance());

  @TempDir Path dir;
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
    cfg = bindings.config(3, caller("a", 10, true));
    served = bindings.serve(cfg, bindings.snapshot(cfg), "a");
    authorization = served.authorization();
    caller = served.caller();
    metadata = new MetadataService(new CatalogResults(new SqlInfoCatalog("test", "18.3.0")),
        served.tickets(), authorization, loopback.handler, loopback.gatewayRoot, cfg.limits());
  }

  @AfterEach
  void stop() throws Exception {
    loopback.close();
  }

  private VerifiedTicket verified(FlightInfo info) {
    return served.verify(info.getEndpoints().get(0).getTicket().getBytes());
  }

  @Test
  void ticketStreamsTheCatalogResultItWasIssuedFor() throws Exception {
    FlightInfo info = metadata.getFlightInfo(GET_TABLES,
        FlightDescriptor.command(GET_TABLES.toByteArray()), caller);
    VerifiedTicket ticket = verified(info);
    LoopbackStreams.Seen seen = loopback.read(ch -> metadata.stream(ch, caller, ticket));
    assertNull(seen.error());
    assertEquals(1, info.getRecords(), "the caller's one published Table");
    assertEquals(info.getRecords(), seen.rows());
    assertEquals(List.of("c"), seen.firsts(), "catalog_name of the published Table");
  }

  @Test
  void readRightRevokedAfterIssueEndsTheStreamWithoutTheBatch() throws Exception {
    FlightInfo info = metadata.getFlightInfo(GET_TABLES,
        FlightDescriptor.command(GET_TABLES.toByteArray()), caller);
    VerifiedTicket ticket = verified(info);
    authorization.install(bindings.next(cfg, bindings.config(3, caller("a", 10, false))));
    LoopbackStreams.Seen seen = loopback.read(ch -> metadata.stream(ch, caller, ticket));
    assertEquals(List.of(), seen.firsts());
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code());
  }
}
