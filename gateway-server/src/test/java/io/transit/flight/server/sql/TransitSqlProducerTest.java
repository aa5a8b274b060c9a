package io.transit.flight.server.sql;

import static io.transit.flight.server.TestBindings.caller;
import static io.transit.flight.server.stream.LoopbackStreams.fact;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.Any;
import com.google.protobuf.Message;
import io.transit.flight.server.GatewayServer;
import io.transit.flight.server.TestBindings;
import io.transit.flight.server.auth.AuthInterceptor;
import io.transit.flight.server.stream.LoopbackStreams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.Criteria;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.GetSessionOptionsRequest;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpSessionOptionValueVisitor;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.sql.FlightSqlUtils;
import org.apache.arrow.flight.sql.impl.FlightSql;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The producer's dispatch through the daemon's own composition ({@link GatewayServer}, port 0)
 * and a real Flight client: each served command type reaches its service and its ticket streams,
 * every other Flight SQL command, action and RPC answers UNIMPLEMENTED with the diagnostic
 * trailer naming it, and bytes that are no protobuf Any are INVALID_ARGUMENT {@code
 * flight.invalid_command}. The daemon's close finds every stream drained and no byte allocated.
 */
class TransitSqlProducerTest {
  private static final int ROWS = 20;
  private static final long WAIT_SECONDS = 20;

  @TempDir Path dir;
  private GatewayServer gateway;
  private BufferAllocator clientAllocator;
  private FlightClient client;
  private String token;

  @BeforeEach
  void start() throws Exception {
    TestBindings bindings = new TestBindings(dir);
    bindings.writeData(ROWS);
    gateway = GatewayServer.start(bindings.config(3, caller("a", 10, true)).withPort(0));
    token = bindings.token("a");
    clientAllocator = new RootAllocator();
    client = FlightClient.builder(clientAllocator,
        Location.forGrpcInsecure("127.0.0.1", gateway.port())).build();
  }

  @AfterEach
  void stop() throws Exception {
    try {
      client.close();
      clientAllocator.close();
    } finally {
      gateway.close();
    }
    assertTrue(gateway.closedCleanly(), "streams drained and no gateway byte left");
  }

  /** The caller's credential, a bounded wait, and optionally the first native sequence. */
  private CallOption[] as(String... sequence) {
    FlightCallHeaders headers = new FlightCallHeaders();
    headers.insert("authorization", "Bearer " + token);
    for (String s : sequence) {
      headers.insert(AuthInterceptor.SEQUENCE_HEADER, s);
    }
    return new CallOption[] {new HeaderCallOption(headers),
        CallOptions.timeout(WAIT_SECONDS, TimeUnit.SECONDS)};
  }

  private static FlightDescriptor command(Message m) {
    return FlightDescriptor.command(Any.pack(m).toByteArray());
  }

  /** Reads the whole stream of the info's one endpoint: the first cell of every row. */
  private List<Object> read(FlightInfo info) throws Exception {
    List<Object> cells = new ArrayList<>();
    try (FlightStream s = client.getStream(info.getEndpoints().get(0).getTicket(), as())) {
      while (s.next()) {
        for (int i = 0; i < s.getRoot().getRowCount(); i++) {
          cells.add(s.getRoot().getVector(0).getObject(i));
        }
      }
    }
    return cells;
  }

  private static JsonNode refused(FlightStatusCode status, Runnable call) throws Exception {
    FlightRuntimeException e = assertThrows(FlightRuntimeException.class, call::run);
    assertEquals(status, e.status().code(), e::getMessage);
    return LoopbackStreams.diagnostic(e);
  }

  @Test
  void statementQueryIsAdmittedAndItsTicketStreamsTheResult() throws Exception {
    FlightSql.CommandStatementQuery query =
        FlightSql.CommandStatementQuery.newBuilder().setQuery("SELECT a FROM t").build();
    Schema schema = client.getSchema(command(query), as()).getSchema();
    assertEquals("a", schema.getFields().get(0).getName());

    long next = client.getSessionOptions(new GetSessionOptionsRequest(), as())
        .getSessionOptions().get(TransitSqlProducer.NEXT_SEQUENCE_OPTION)
        .acceptVisitor(new NoOpSessionOptionValueVisitor<Long>() {
          @Override
          public Long visit(long value) {
            return value;
          }
        });
    FlightInfo info = client.getInfo(command(query), as(Long.toUnsignedString(next)));
    assertEquals(ROWS, info.getRecords());
    List<Object> cells = read(info);
    assertEquals(ROWS, cells.size());
    assertEquals(0L, cells.get(0));
    assertEquals((long) ROWS - 1, cells.get(ROWS - 1));
  }

  @Test
  void catalogCommandIsServedByTheMetadataServiceAndItsTicketStreams() throws Exception {
    FlightSql.CommandGetTables tables = FlightSql.CommandGetTables.getDefaultInstance();
    assertEquals("catalog_name",
        client.getSchema(command(tables), as()).getSchema().getFields().get(0).getName());
    FlightInfo info = client.getInfo(command(tables), as());
    assertEquals(1, info.getRecords(), "the caller's one published Table");
    assertEquals(List.of("c"), read(info).stream().map(String::valueOf).toList());
  }

  static Stream<Message> unsupportedCommands() {
    return Stream.of(
        FlightSql.CommandPreparedStatementQuery.getDefaultInstance(),
        FlightSql.CommandStatementSubstraitPlan.getDefaultInstance(),
        FlightSql.CommandGetPrimaryKeys.getDefaultInstance(),
        FlightSql.CommandGetExportedKeys.getDefaultInstance(),
        FlightSql.CommandGetImportedKeys.getDefaultInstance(),
        FlightSql.CommandGetCrossReference.getDefaultInstance(),
        FlightSql.CommandGetXdbcTypeInfo.getDefaultInstance(),
        FlightSql.CommandStatementUpdate.getDefaultInstance());
  }

  @ParameterizedTest
  @MethodSource("unsupportedCommands")
  void otherFlightSqlCommandIsUnimplementedWithATrailerNamingIt(Message m) throws Exception {
    // Named by its Flight SQL name, never by the caller's type URL (any text before its '/').
    String name = m.getDescriptorForType().getName();
    JsonNode info = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.getInfo(command(m), as("1")));
    assertEquals("flight.unimplemented", info.get("code").asText());
    assertEquals(name, fact(info, "operation"));
    JsonNode schema = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.getSchema(command(m), as()));
    assertEquals(name, fact(schema, "operation"));
  }

  @Test
  void descriptorThatIsNoProtobufAnyIsInvalidArgument() throws Exception {
    JsonNode d = refused(FlightStatusCode.INVALID_ARGUMENT,
        () -> client.getInfo(FlightDescriptor.command(new byte[] {0x0a, (byte) 0xff, (byte) 0xff}),
            as("1")));
    assertEquals("flight.invalid_command", d.get("code").asText());
  }

  @Test
  void pathDescriptorIsUnimplemented() throws Exception {
    JsonNode d = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.getInfo(FlightDescriptor.path("t"), as()));
    assertEquals("flight.path_descriptor", d.get("code").asText());
  }

  @Test
  void flightSqlActionsAreUnimplementedAndAnUnknownActionIsInvalid() throws Exception {
    String create = FlightSqlUtils.FLIGHT_SQL_CREATE_PREPARED_STATEMENT.getType();
    JsonNode d = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.doAction(new Action(create, new byte[0]), as()).hasNext());
    assertEquals(create, fact(d, "operation"));
    JsonNode unknown = refused(FlightStatusCode.INVALID_ARGUMENT,
        () -> client.doAction(new Action("NoSuchAction", new byte[0]), as()).hasNext());
    assertEquals("flight.unknown_action", unknown.get("code").asText());
    assertEquals(List.of(), toList(client.listActions(as())));
  }

  @Test
  void rpcsOutsideTheProfileAreUnimplemented() throws Exception {
    JsonNode flights = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.listFlights(Criteria.ALL, as()).iterator().hasNext());
    assertEquals("ListFlights", fact(flights, "operation"));
    JsonNode poll = refused(FlightStatusCode.UNIMPLEMENTED,
        () -> client.pollInfo(FlightDescriptor.command(new byte[0]), as()));
    assertEquals("PollFlightInfo", fact(poll, "operation"));
  }

  @Test
  void ticketThatIsNoFtk1TicketIsInvalidArgumentBeforeAnyStream() throws Exception {
    FlightRuntimeException e;
    try (FlightStream s = client.getStream(new Ticket(new byte[] {1, 2, 3}), as())) {
      e = assertThrows(FlightRuntimeException.class, s::next);
    }
    assertEquals(FlightStatusCode.INVALID_ARGUMENT, e.status().code());
    assertTrue(LoopbackStreams.diagnostic(e).get("code").asText().startsWith("ticket."));
  }

  private static <T> List<T> toList(Iterable<T> items) {
    List<T> out = new ArrayList<>();
    items.forEach(out::add);
    return out;
  }
}
