package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A real Arrow FlightServer on 127.0.0.1 whose producer fails with a GatewayException: the
 * client sees the status code, the bounded message and the transit-diagnostic-bin trailer.
 */
class FlightRoundTripTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PERCENT_MESSAGE = "used 100% of 50%25 budget ~ {\"a\":1}";
  private static final CallOption DEADLINE = org.apache.arrow.flight.CallOptions.timeout(10, TimeUnit.SECONDS);

  private final ErrorMapper mapper = new ErrorMapper();
  private BufferAllocator allocator;
  private FlightServer server;
  private ManagedChannel channel;
  private FlightClient client;
  private final AtomicReference<Status> lastStatus = new AtomicReference<>();
  private final AtomicReference<Metadata> lastTrailers = new AtomicReference<>();

  /** Fails every call: the command or ticket names the cause and whether to throw gRPC or Flight. */
  private final class FailingProducer extends NoOpFlightProducer {
    private RuntimeException failure(byte[] request) {
      String[] parts = new String(request, StandardCharsets.UTF_8).split(" ", 2);
      Cause cause = Cause.valueOf(parts[1]);
      GatewayException e = GatewayException.of(cause, "test." + cause.name().toLowerCase(), PERCENT_MESSAGE)
          .with(Fact.unsigned("expected_sequence", -2L))
          .at(Stage.ADMISSION);
      return parts[0].equals("grpc") ? mapper.toGrpc(e) : mapper.toFlight(e);
    }

    @Override
    public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
      throw failure(descriptor.getCommand());
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
      listener.error(failure(ticket.getBytes()));
    }
  }

  @BeforeEach
  void start() throws Exception {
    allocator = new RootAllocator(Long.MAX_VALUE);
    server = FlightServer.builder(allocator, Location.forGrpcInsecure("127.0.0.1", 0), new FailingProducer())
        .build()
        .start();
    ClientInterceptor capture = new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, io.grpc.CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                lastStatus.set(status);
                lastTrailers.set(trailers);
                super.onClose(status, trailers);
              }
            }, headers);
          }
        };
      }
    };
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
        .usePlaintext()
        .intercept(capture)
        .build();
    client = FlightGrpcUtils.createFlightClient(allocator, channel);
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    server.shutdown();
    server.awaitTermination(10, TimeUnit.SECONDS);
    server.close();
    allocator.close(); // fails the test on any leaked buffer
  }

  private FlightRuntimeException getInfoFailure(String mode, Cause cause) {
    FlightDescriptor d = FlightDescriptor.command((mode + " " + cause.name()).getBytes(StandardCharsets.UTF_8));
    return assertThrows(FlightRuntimeException.class, () -> client.getInfo(d, DEADLINE));
  }

  @Test
  void getFlightInfoFailureCarriesExactStatusBoundedMessageAndTrailer() throws Exception {
    for (Cause cause : new Cause[] {Cause.NAMESPACE_CONFLICT, Cause.SEQUENCE_GAP, Cause.EVIDENCE,
        Cause.ARITHMETIC_OVERFLOW, Cause.ADMISSION_BUSY, Cause.UNKNOWN_OUTCOME}) {
      FlightRuntimeException e = getInfoFailure("grpc", cause);
      String expectedMessage = "test." + cause.name().toLowerCase() + ": " + PERCENT_MESSAGE;
      assertEquals(cause.code(), lastStatus.get().getCode(), "exact code on the wire");
      assertEquals(StatusUtils.fromGrpcStatusCode(cause.code()), e.status().code());
      assertEquals(expectedMessage, e.status().description(), "'%' survives the wire");
      byte[] trailer = e.status().metadata().getByte(ErrorMapper.TRAILER_KEY);
      assertNotNull(trailer);
      assertArrayEquals(trailer, lastTrailers.get().get(ErrorMapper.TRAILER));
      assertArrayEquals(mapper.diagnosticBytes(GatewayException.of(cause, "test." + cause.name().toLowerCase(), PERCENT_MESSAGE)
          .with(Fact.unsigned("expected_sequence", -2L)).at(Stage.ADMISSION)), trailer);
      var d = JSON.readTree(trailer);
      assertEquals(cause.code().name(), d.get("status").asText());
      assertEquals("18446744073709551614", d.get("facts").get(0).get("value").asText());
    }
  }

  @Test
  void percentSignSurvivesTheWireInTheRawStatus() {
    getInfoFailure("grpc", Cause.INVALID_REQUEST);
    assertEquals("test.invalid_request: " + PERCENT_MESSAGE, lastStatus.get().getDescription());
  }

  @Test
  void doGetErrorCarriesTrailerInTheExceptionStatus() throws Exception {
    Ticket ticket = new Ticket(("grpc " + Cause.TICKET_EXPIRED.name()).getBytes(StandardCharsets.UTF_8));
    FlightRuntimeException e;
    try (FlightStream stream = client.getStream(ticket, DEADLINE)) {
      e = assertThrows(FlightRuntimeException.class, stream::next);
    }
    assertEquals(Status.Code.FAILED_PRECONDITION, lastStatus.get().getCode());
    assertEquals("test.ticket_expired: " + PERCENT_MESSAGE, e.status().description());
    var d = JSON.readTree(e.status().metadata().getByte(ErrorMapper.TRAILER_KEY));
    assertEquals("reissue_with_getflightinfo", d.get("actions").get(0).asText());
  }

  @Test
  void flightFormKeepsTrailerButArrowNarrowsTheCode() throws Exception {
    FlightRuntimeException e = getInfoFailure("flight", Cause.NAMESPACE_CONFLICT);
    // Arrow 18's FlightStatusCode has no ABORTED: the wire carries its nearest code ...
    assertEquals(StatusUtils.toGrpcStatusCode(StatusUtils.fromGrpcStatusCode(Status.Code.ABORTED)),
        lastStatus.get().getCode());
    // ... while the trailer still names the exact status.
    var d = JSON.readTree(e.status().metadata().getByte(ErrorMapper.TRAILER_KEY));
    assertEquals("ABORTED", d.get("status").asText());
    FlightRuntimeException unsupported = getInfoFailure("flight", Cause.UNSUPPORTED);
    assertEquals(Status.Code.UNIMPLEMENTED, lastStatus.get().getCode());
    assertEquals("test.unsupported: " + PERCENT_MESSAGE, unsupported.status().description());
  }

  @Test
  void unauthenticatedCarriesOnlyTheMinimalEnvelope() {
    FlightRuntimeException e = getInfoFailure("grpc", Cause.UNAUTHENTICATED);
    assertEquals(Status.Code.UNAUTHENTICATED, lastStatus.get().getCode());
    assertEquals(ErrorMapper.UNAUTHENTICATED_MESSAGE, e.status().description());
    String json = new String(lastTrailers.get().get(ErrorMapper.TRAILER),
        java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(json.contains("\"code\":\"auth.unauthenticated\"") && json.contains("\"identity\":{},\"facts\":[]"),
        json);
  }
}
