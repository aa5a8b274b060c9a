package io.transit.flight.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.transit.flight.server.sql.TransitSqlProducer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.GetSessionOptionsRequest;
import org.apache.arrow.flight.NoOpSessionOptionValueVisitor;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.vector.BigIntVector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The channel contract's scenarios that cross the wire (S2 consumer hang, S3/S4 client cancel,
 * S7 a reader that stops reading), on the real daemon with a real {@link FlightSqlClient}. Each
 * test ends with the daemon holding no live stream and zero bytes in its root allocator, and
 * with a follow-up query on the same daemon succeeding. No assertion depends on timing: waits
 * are bounded, and a hang shows up as a deadline status instead of the expected one.
 */
class ChannelScenariosOnDaemonTest extends DaemonTestBase {
  /** Deadline of the calls whose outcome must be an error, not a hang. */
  private static final long CALL_BOUND_SECONDS = 30;
  private static final String MILLION_ROWS = "SELECT id, a, b, c, d FROM primitive";


  @Test
  void s4_clientCancelAfterFirstBatchOfMillionRowResult() throws Exception {
    FlightInfo info = execute(gw, client, "primitive", MILLION_ROWS);
    assertTrue(info.getRecords() >= 1_000_000, "a large result: " + info.getRecords());
    Ticket ticket = info.getEndpoints().get(0).getTicket();
    int permits = gw.server.streams().availablePermits();
    for (int round = 0; round < 5; round++) {
      FlightStream stream = client.getStream(ticket, bounded(gw, "primitive"));
      assertTrue(stream.next(), "the first batch arrives");
      long firstRows = stream.getRoot().getRowCount();
      assertTrue(firstRows > 0 && firstRows < info.getRecords(),
          "the cancel comes mid-stream (first batch " + firstRows + " rows)");
      // The server is still producing and sending: it cannot have fit the rest into gRPC's
      // buffers, since this client has not read beyond the first batch.
      stream.cancel("test: cancel after the first batch", null);
      closeCancelled(stream);
      gw.assertNoStreamMemory();
      assertEquals(permits, gw.server.streams().availablePermits(), "the permit came back once");
    }
    assertFollowUpQuerySucceeds(gw, client);
  }

  @Test
  void s3_clientCancelBeforeAnyBatch() throws Exception {
    FlightInfo info = execute(gw, client, "primitive", MILLION_ROWS);
    Ticket ticket = info.getEndpoints().get(0).getTicket();
    int permits = gw.server.streams().availablePermits();
    for (int round = 0; round < 5; round++) {
      // Cancelled before the stream produced anything: the cancel may reach the daemon before
      // the stream is opened, while the producer reads the manifest, or while it is idle.
      FlightStream stream = client.getStream(ticket, bounded(gw, "primitive"));
      stream.cancel("test: cancel before reading", null);
      closeCancelled(stream);
      gw.assertNoStreamMemory();
      assertEquals(permits, gw.server.streams().availablePermits(), "the permit came back once");
    }
    assertFollowUpQuerySucceeds(gw, client);
  }

  @Test
  void s2_failedFirstBatchReachesTheConsumerAsAnErrorNotAHang() throws Exception {
    // The statement is admitted; its first result segment holds cells that cannot be int64.
    FlightInfo info = execute(gw, client, "cells", "SELECT bad FROM cells");
    try (FlightStream stream =
        client.getStream(info.getEndpoints().get(0).getTicket(), bounded(gw, "cells"))) {
      FlightRuntimeException e = assertThrows(FlightRuntimeException.class, stream::next);
      // A hang would end in DEADLINE_EXCEEDED at the call bound instead.
      assertDiagnostic(e, "FAILED_PRECONDITION", "query.cell_state");
    }
    gw.assertNoStreamMemory();
    FlightInfo ok = execute(gw, client, "cells", "SELECT ok FROM cells");
    assertTrue(readAll(gw, client, ok, "cells") > 0, "the cells caller is still served");
  }

  @Test
  void s7_readerThatStopsReadingIsCutOffAfterTheCreditStallBudget(@TempDir Path slowState)
      throws Exception {
    try (GatewayFixture slow = new GatewayFixture(slowState,
            cfg -> cfg.withObject("/limits").put("credit_stall_ms", 300));
        FlightSqlClient slowClient = slow.client()) {
      FlightInfo info = execute(slow, slowClient, "primitive", MILLION_ROWS);
      try (FlightStream stream =
          slowClient.getStream(info.getEndpoints().get(0).getTicket(), bounded(slow, "primitive"))) {
        assertTrue(stream.next(), "the first batch arrives");
        // The client now reads nothing: gRPC's flow-control window fills, the producer parks in
        // the readiness gate, and the budget cuts the stream off and frees its Arrow buffers
        // while this client still holds the call open. Its status waits behind the batch gRPC
        // still holds for it; the same budget later resets the call, which drops that batch and
        // releases the stream (its permit, its share).
        awaitTrue(() -> slow.server.streams().liveStreams() == 0
            && slow.server.allocator().getAllocatedMemory() == 0, "the stalled stream released");
        assertEquals(1, slow.server.streams().releasedStreams(), "one stream, released once");
        assertEquals(0, slow.server.streams().leakedStreams(), "no leaked stream");
        FlightRuntimeException e = assertThrows(FlightRuntimeException.class, () -> {
          while (stream.next()) {
            // Frames the client had received before the reset still arrive; the reset follows.
          }
        });
        assertEquals(FlightStatusCode.CANCELLED, e.status().code(), e.toString());
      }
      slow.assertNoStreamMemory();
      assertFollowUpQuerySucceeds(slow, slowClient);
    }
  }

  private static CallOption[] bounded(GatewayFixture g, String caller) throws Exception {
    CallOption[] as = g.as(caller, null);
    // The last option wins: replace the fixture's 60 s deadline with the test's bound.
    as[as.length - 1] = CallOptions.timeout(CALL_BOUND_SECONDS, TimeUnit.SECONDS);
    return as;
  }

  /** Closes a cancelled stream; closing may report the cancel again, but nothing else. */
  private static void closeCancelled(FlightStream stream) {
    try {
      stream.close();
    } catch (FlightRuntimeException e) {
      assertEquals(FlightStatusCode.CANCELLED, e.status().code(), e.toString());
    } catch (Exception e) {
      throw new AssertionError("closing a cancelled stream failed", e);
    }
  }

  private static void assertFollowUpQuerySucceeds(GatewayFixture g, FlightSqlClient c)
      throws Exception {
    FlightInfo sum = execute(g, c, "primitive", "SELECT SUM(id) FROM primitive WHERE id < 100");
    try (FlightStream s = c.getStream(sum.getEndpoints().get(0).getTicket(), g.as("primitive", null))) {
      assertTrue(s.next());
      assertEquals(4950L, ((BigIntVector) s.getRoot().getVector(0)).get(0));
      assertFalse(s.next());
    }
    g.assertNoStreamMemory();
  }

  private static long readAll(GatewayFixture g, FlightSqlClient c, FlightInfo info, String caller)
      throws Exception {
    long rows = 0;
    try (FlightStream s = c.getStream(info.getEndpoints().get(0).getTicket(), g.as(caller, null))) {
      while (s.next()) {
        rows += s.getRoot().getRowCount();
      }
    }
    return rows;
  }

  private static FlightInfo execute(GatewayFixture g, FlightSqlClient c, String caller, String sql)
      throws Exception {
    var options = c.getSessionOptions(new GetSessionOptionsRequest(), g.as(caller, null))
        .getSessionOptions();
    long[] next = new long[1];
    options.get(TransitSqlProducer.NEXT_SEQUENCE_OPTION).acceptVisitor(
        new NoOpSessionOptionValueVisitor<Void>() {
          @Override
          public Void visit(long v) {
            next[0] = v;
            return null;
          }
        });
    return c.execute(sql, g.as(caller, next[0]));
  }

  /** The exact gRPC status (from the diagnostic trailer) and the diagnostic code. */
  private static void assertDiagnostic(FlightRuntimeException e, String grpcStatus, String code) {
    assertTrue(e.getMessage().contains(code), e.getMessage());
    byte[] trailer = e.status().metadata().getByte("transit-diagnostic-bin");
    assertNotNull(trailer, "diagnostic trailer present: " + e);
    String json = new String(trailer, StandardCharsets.UTF_8);
    assertTrue(json.contains("\"status\":\"" + grpcStatus + "\""), json);
    assertTrue(json.contains(code), json);
  }

  private static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CALL_BOUND_SECONDS);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting for: " + what);
      }
      Thread.sleep(10);
    }
  }
}
