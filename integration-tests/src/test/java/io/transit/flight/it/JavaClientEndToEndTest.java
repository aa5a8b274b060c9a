package io.transit.flight.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.server.sql.TransitSqlProducer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.GetSessionOptionsRequest;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.junit.jupiter.api.Test;

/** Java FlightSqlClient against the real daemon on loopback, exact status codes included. */
class JavaClientEndToEndTest extends DaemonTestBase {

  long nextSequence(String caller) throws Exception {
    var result = client.getSessionOptions(new GetSessionOptionsRequest(), gw.as(caller, null));
    var value = result.getSessionOptions().get(TransitSqlProducer.NEXT_SEQUENCE_OPTION);
    long[] out = new long[1];
    value.acceptVisitor(new org.apache.arrow.flight.NoOpSessionOptionValueVisitor<Void>() {
      @Override
      public Void visit(long v) {
        out[0] = v;
        return null;
      }
    });
    return out[0];
  }

  List<List<Long>> rows(FlightInfo info, String caller) throws Exception {
    List<List<Long>> rows = new ArrayList<>();
    try (FlightStream s = client.getStream(info.getEndpoints().get(0).getTicket(), gw.as(caller, null))) {
      while (s.next()) {
        VectorSchemaRoot root = s.getRoot();
        for (int r = 0; r < root.getRowCount(); r++) {
          List<Long> row = new ArrayList<>();
          for (var v : root.getFieldVectors()) {
            row.add(v.isNull(r) ? null : ((BigIntVector) v).get(r));
          }
          rows.add(row);
        }
      }
    }
    return rows;
  }

  FlightInfo execute(String caller, String sql) throws Exception {
    return client.execute(sql, gw.as(caller, nextSequence(caller)));
  }

  @Test
  void queriesReturnInt64Results() throws Exception {
    FlightInfo count = execute("primitive", "SELECT COUNT(*) FROM primitive");
    long n = rows(count, "primitive").get(0).get(0);
    assertTrue(n >= 1_000_000, "demo table has at least a million rows");
    assertEquals(1, count.getRecords());
    assertEquals(-1, count.getBytes());
    FlightInfo limited = execute("primitive", "SELECT id, a FROM primitive WHERE id BETWEEN 5 AND 9 LIMIT 3");
    assertEquals(3, rows(limited, "primitive").size());
    for (var f : limited.getSchemaOptional().orElseThrow().getFields()) {
      assertEquals(new ArrowType.Int(64, true), f.getType());
    }
    FlightInfo empty = execute("primitive", "SELECT id FROM primitive WHERE id < 0");
    assertEquals(0, empty.getRecords());
    assertEquals(List.of(), rows(empty, "primitive"));
    FlightInfo sum = execute("primitive", "SELECT SUM(id) FROM primitive WHERE id < 100");
    assertEquals(List.of(List.of(4950L)), rows(sum, "primitive"));
  }

  @Test
  void getSchemaCompilesAndRecordsNothing() throws Exception {
    long before = nextSequence("primitive");
    SchemaResult schema = client.getExecuteSchema("SELECT id, b FROM primitive", gw.as("primitive", before));
    assertEquals(List.of("id", "b"), schema.getSchema().getFields().stream().map(f -> f.getName()).toList());
    assertEquals(before, nextSequence("primitive"));
  }

  @Test
  void appMetadataCarriesNextSequenceAndRetryReplays() throws Exception {
    long first = nextSequence("primitive");
    FlightInfo a = client.execute("SELECT COUNT(b) FROM primitive", gw.as("primitive", first));
    String meta = new String(a.getAppMetadata(), StandardCharsets.US_ASCII);
    long next = nextSequence("primitive");
    assertEquals("{\"version\":1,\"next_sequence\":" + next + "}", meta);
    FlightInfo again = client.execute("SELECT COUNT(b) FROM primitive", gw.as("primitive", first));
    byte[] t1 = a.getEndpoints().get(0).getTicket().getBytes();
    byte[] t2 = again.getEndpoints().get(0).getTicket().getBytes();
    assertArrayEquals(java.util.Arrays.copyOfRange(t1, 145, 186), java.util.Arrays.copyOfRange(t2, 145, 186),
        "same correlation and manifest");
    assertEquals(next, nextSequence("primitive"), "a replay records nothing new");
    assertEquals(rows(a, "primitive"), rows(again, "primitive"));
  }

  @Test
  void exactStatusCodes() throws Exception {
    long seq = nextSequence("primitive");
    client.execute("SELECT COUNT(*) FROM primitive", gw.as("primitive", seq));
    assertCode("ABORTED", "query.namespace_conflict",
        () -> client.execute("SELECT SUM(a) FROM primitive", gw.as("primitive", seq)));
    long next = nextSequence("primitive");
    FlightRuntimeException gap = assertCode("FAILED_PRECONDITION", "query.sequence_gap",
        () -> client.execute("SELECT SUM(a) FROM primitive", gw.as("primitive", next + 5)));
    assertTrue(gap.getMessage().contains(Long.toString(next)), gap.getMessage());
    assertCode("INVALID_ARGUMENT", "sequence.missing",
        () -> client.execute("SELECT SUM(a) FROM primitive", gw.as("primitive", null)));
    assertCode("UNIMPLEMENTED", "query.unsupported",
        () -> client.execute("SELECT region FROM mixed", gw.as("mixed", nextSequence("mixed"))));
    assertCode("UNIMPLEMENTED", "flight.unimplemented",
        () -> client.prepare("SELECT id FROM primitive", gw.as("primitive", null)));
  }

  @Test
  void sumOverflowIsOutOfRange() throws Exception {
    assertCode("OUT_OF_RANGE", "query.arithmetic_overflow",
        () -> execute("cells", "SELECT SUM(huge) FROM cells"));
  }

  @Test
  void unauthenticatedCallsGetOnlyTheMinimalEnvelope() throws Exception {
    var h = new org.apache.arrow.flight.FlightCallHeaders();
    h.insert("authorization", "Bearer wrong-token-wrong-token-wrong-token");
    FlightRuntimeException e = assertThrows(FlightRuntimeException.class,
        () -> client.getCatalogs(new org.apache.arrow.flight.HeaderCallOption(h),
            CallOptions.timeout(60, TimeUnit.SECONDS)));
    assertEquals(FlightStatusCode.UNAUTHENTICATED, e.status().code());
    assertEquals("auth.unauthenticated: a valid credential is required"
        + " (a Bearer authorization header on every call)", e.status().description());
    // The one minimal envelope (docs/status.md): no identity, facts or stage for an unknown caller.
    String d = new String(e.status().metadata().getByte("transit-diagnostic-bin"),
        java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(d.contains("\"code\":\"auth.unauthenticated\"")
        && d.contains("\"identity\":{},\"facts\":[]") && !d.contains("\"stage\""), d);
  }

  /**
   * The call fails with the gRPC status {@code grpcCode} and the diagnostic code. Arrow Java's
   * FlightStatusCode has no ABORTED, FAILED_PRECONDITION, OUT_OF_RANGE or DATA_LOSS, so the
   * exact status is read from the trailer's {@code status} field; where Arrow has the code, the
   * client's view is checked too.
   */
  @Test
  void pollListFlightsAndDoPutAreUnimplemented() throws Exception {
    try (var flight = org.apache.arrow.flight.FlightClient.builder(gw.clientAllocator,
        org.apache.arrow.flight.Location.forGrpcInsecure("127.0.0.1", gw.server.port())).build()) {
      var descriptor = org.apache.arrow.flight.FlightDescriptor.command(
          com.google.protobuf.Any.pack(org.apache.arrow.flight.sql.impl.FlightSql.CommandStatementQuery
              .newBuilder().setQuery("SELECT id FROM primitive").build()).toByteArray());
      FlightRuntimeException poll = assertThrows(FlightRuntimeException.class,
          () -> flight.pollInfo(descriptor, gw.as("primitive", 1L)));
      assertEquals(FlightStatusCode.UNIMPLEMENTED, poll.status().code());
      FlightRuntimeException list = assertThrows(FlightRuntimeException.class,
          () -> flight.listFlights(org.apache.arrow.flight.Criteria.ALL, gw.as("primitive", null))
              .forEach(f -> { }));
      assertEquals(FlightStatusCode.UNIMPLEMENTED, list.status().code());
    }
  }

  static FlightRuntimeException assertCode(String grpcCode, String diagnostic,
      org.junit.jupiter.api.function.Executable call) {
    FlightRuntimeException e = assertThrows(FlightRuntimeException.class, call);
    assertTrue(e.getMessage().contains(diagnostic), e.getMessage());
    byte[] trailer = e.status().metadata().getByte("transit-diagnostic-bin");
    assertNotNull(trailer, "diagnostic trailer present");
    String json = new String(trailer, StandardCharsets.UTF_8);
    assertTrue(json.contains("\"status\":\"" + grpcCode + "\""), json);
    assertTrue(json.contains(diagnostic), json);
    for (FlightStatusCode c : FlightStatusCode.values()) {
      if (c.name().equals(grpcCode)) {
        assertEquals(c, e.status().code(), e.getMessage());
      }
    }
    return e;
  }
}
