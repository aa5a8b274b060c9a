package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.junit.jupiter.api.Test;

class ErrorMapperTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ErrorMapper mapper = new ErrorMapper();

  private static GatewayException failure(Cause cause) {
    return GatewayException.of(cause, "test." + cause.name().toLowerCase(), "failed at 50%")
        .with(Fact.unsigned("limit", -1L))
        .withIdentity(new Identity(7L, 9L, 7L, 10L))
        .at(Stage.ADMISSION);
  }

  @Test
  void everyCauseMapsToItsStatusMessageAndDecodableTrailer() throws Exception {
    for (Cause cause : Cause.values()) {
      GatewayException e = failure(cause);
      StatusRuntimeException grpc = mapper.toGrpc(e);
      assertEquals(cause.code(), grpc.getStatus().getCode(), cause.name());
      FlightRuntimeException flight = mapper.toFlight(e);
      assertEquals(StatusUtils.fromGrpcStatusCode(cause.code()), flight.status().code());
      byte[] grpcTrailer = grpc.getTrailers().get(ErrorMapper.TRAILER);
      if (cause == Cause.UNAUTHENTICATED) {
        assertEquals(ErrorMapper.UNAUTHENTICATED_MESSAGE, grpc.getStatus().getDescription());
        assertEquals(ErrorMapper.UNAUTHENTICATED_MESSAGE, flight.status().description());
        JsonNode minimal = JSON.readTree(grpcTrailer);
        assertEquals("auth.unauthenticated", minimal.get("code").asText());
        assertEquals("UNAUTHENTICATED", minimal.get("cause").asText());
        assertTrue(minimal.get("identity").isEmpty(), "no identity for an unknown caller");
        assertTrue(minimal.get("facts") == null || minimal.get("facts").isEmpty(), minimal.toString());
        continue;
      }
      byte[] flightTrailer = flight.status().metadata().getByte(ErrorMapper.TRAILER_KEY);
      assertEquals("test." + cause.name().toLowerCase() + ": failed at 50%",
          grpc.getStatus().getDescription());
      assertEquals(grpc.getStatus().getDescription(), flight.status().description());
      JsonNode d = JSON.readTree(grpcTrailer);
      assertEquals(cause.name(), d.get("cause").asText());
      assertEquals(cause.code().name(), d.get("status").asText(), "trailer names the exact status");
      assertEquals("admission", d.get("stage").asText());
      assertEquals(Recovery.outcome(cause).wireName(), d.get("outcome").asText());
      assertEquals(Recovery.actions(cause).get(0).wireName(), d.get("actions").get(0).asText());
      boolean access = cause == Cause.ACCESS_DENIED || cause == Cause.TICKET_SCOPE;
      // An internal failure also carries the operator reference it was logged with.
      int facts = access ? 0 : cause == Cause.INTERNAL ? 2 : 1;
      assertEquals(facts, d.get("facts").size(), cause.name());
      assertEquals(access ? 0 : 4, d.get("identity").size(), cause.name());
      if (!access) {
        assertEquals("18446744073709551615", d.get("facts").get(0).get("value").asText());
      }
      if (cause != Cause.INTERNAL) { // each internal mapping logs under a fresh reference
        assertEquals(JSON.readTree(grpcTrailer), JSON.readTree(flightTrailer));
      }
    }
  }

  /** The last resort builds nothing per call: each call gets its own trailers, equal bytes. */
  @Test
  void theLastResortIsInternalWithAFixedTrailerPerOutcome() throws Exception {
    for (boolean incomplete : new boolean[] {false, true}) {
      StatusRuntimeException first = ErrorMapper.lastResort(incomplete);
      StatusRuntimeException second = ErrorMapper.lastResort(incomplete);
      assertEquals(Status.Code.INTERNAL, first.getStatus().getCode());
      assertTrue(first.getStatus().getDescription().startsWith("gateway.internal: "));
      assertTrue(first.getTrailers() != second.getTrailers(), "trailers are not shared");
      JsonNode d = JSON.readTree(first.getTrailers().get(ErrorMapper.TRAILER));
      assertEquals(JSON.readTree(second.getTrailers().get(ErrorMapper.TRAILER)), d);
      assertEquals("gateway.internal", d.get("code").asText());
      assertEquals("INTERNAL", d.get("status").asText());
      assertEquals(incomplete ? "incomplete" : "unknown", d.get("outcome").asText());
    }
  }

  @Test
  void unexpectedThrowableIsInternalWithoutItsText() throws Exception {
    StatusRuntimeException s = mapper.toGrpc(new IllegalStateException("secret /etc/key.pem"));
    assertEquals(Status.Code.INTERNAL, s.getStatus().getCode());
    String description = s.getStatus().getDescription();
    assertFalse(description.contains("secret"));
    assertTrue(description.matches("gateway\\.internal: internal error, reference [0-9a-f]{16}"),
        description);
    JsonNode d = JSON.readTree(s.getTrailers().get(ErrorMapper.TRAILER));
    assertEquals("reference", d.get("facts").get(0).get("name").asText());
    assertTrue(description.endsWith(d.get("facts").get(0).get("value").asText()));
    assertFalse(new String(s.getTrailers().get(ErrorMapper.TRAILER)).contains("secret"));
  }

  /**
   * Allocation failure is UNAVAILABLE however it arrives: an Arrow limit wrapped by a library, or
   * the JVM's own error (Netty's direct memory), not INTERNAL.
   */
  @Test
  void anAllocationFailureIsUnavailableWrappedOrAsTheJvmsError() {
    for (Throwable t : new Throwable[] {
        new RuntimeException("wrapped", new org.apache.arrow.memory.OutOfMemoryException("limit")),
        new OutOfMemoryError("Cannot reserve 16777216 bytes of direct buffer memory")}) {
      StatusRuntimeException s = mapper.toGrpc(t);
      assertEquals(Status.Code.UNAVAILABLE, s.getStatus().getCode(), t.toString());
      assertTrue(s.getStatus().getDescription().startsWith("flight.allocation: "),
          s.getStatus().getDescription());
      assertFalse(s.getStatus().getDescription().contains("16777216"));
    }
    // An internal failure mapped twice keeps its one reference (logged once).
    GatewayException first = ErrorMapper.gatewayFailure(new IllegalStateException("defect"));
    assertEquals(first.facts().get("reference"),
        ErrorMapper.gatewayFailure(first).facts().get("reference"));
  }

  @Test
  void foreignStatusKeepsItsMeaningButNotItsDescription() {
    StatusRuntimeException foreign =
        Status.UNIMPLEMENTED.withDescription("internal class Foo at 10.0.0.5").asRuntimeException();
    StatusRuntimeException s = mapper.toGrpc(foreign);
    assertEquals(Status.Code.UNIMPLEMENTED, s.getStatus().getCode());
    assertEquals("flight.unsupported: the operation is outside the profile", s.getStatus().getDescription());

    FlightRuntimeException arrow = CallStatus.CANCELLED.withDescription("x").toRuntimeException();
    assertEquals(Status.Code.CANCELLED, mapper.toGrpc(arrow).getStatus().getCode());
    assertEquals(Status.Code.INTERNAL,
        mapper.toGrpc(Status.DATA_LOSS.withDescription("y").asRuntimeException()).getStatus().getCode());
  }

  @Test
  void mappingIsIdempotentAndKeepsTheExactCode() {
    GatewayException e = failure(Cause.NAMESPACE_CONFLICT);
    StatusRuntimeException once = mapper.toGrpc(e);
    StatusRuntimeException twice = mapper.toGrpc(once);
    assertEquals(Status.Code.ABORTED, twice.getStatus().getCode());
    assertEquals(once.getStatus().getDescription(), twice.getStatus().getDescription());
    // Flight has no ABORTED; mapping its exception again recovers the exact code.
    assertEquals(Status.Code.ABORTED, mapper.toGrpc(mapper.toFlight(e)).getStatus().getCode());
  }

  @Test
  void trailerOverTheBudgetIsLeftOutAndStatusKept() {
    GatewayException e = failure(Cause.SEQUENCE_GAP);
    int size = ErrorMapper.encodedSize(mapper.diagnosticBytes(e).length);
    StatusRuntimeException tight = new ErrorMapper(size - 1).toGrpc(e);
    assertEquals(Status.Code.FAILED_PRECONDITION, tight.getStatus().getCode());
    assertNull(tight.getTrailers().get(ErrorMapper.TRAILER));
    assertNotNull(new ErrorMapper(size).toGrpc(e).getTrailers().get(ErrorMapper.TRAILER));
  }

  @Test
  void largestDiagnosticFitsTheDefaultBudget() {
    assertTrue(ErrorMapper.encodedSize(Diagnostic.MAX_BYTES) <= ErrorMapper.DEFAULT_TRAILER_BUDGET);
    assertEquals(ErrorMapper.TRAILER_KEY.length() + 4 + 32, ErrorMapper.encodedSize(3));
  }

  @Test
  void failureToBuildTheDetailKeepsStatusAndMessage() {
    GatewayException bad = GatewayException.of(Cause.BUDGET_EXHAUSTED, "Not A Code", "too big");
    StatusRuntimeException s = mapper.toGrpc(bad);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, s.getStatus().getCode());
    assertEquals("Not A Code: too big", s.getStatus().getDescription());
    assertNull(s.getTrailers().get(ErrorMapper.TRAILER));
  }

  @Test
  void longNonAsciiMessageIsBoundedInTheStatusButKeptInTheTrailer() throws Exception {
    String message = "ünïcode ".repeat(100);
    StatusRuntimeException s =
        mapper.toGrpc(GatewayException.of(Cause.INVALID_REQUEST, "query.invalid_plan", message));
    assertTrue(s.getStatus().getDescription().length() <= GrpcMessage.MAX_BYTES);
    assertTrue(s.getStatus().getDescription().endsWith(GrpcMessage.TRUNCATION_MARKER));
    assertEquals(message, JSON.readTree(s.getTrailers().get(ErrorMapper.TRAILER)).get("message").asText());
  }

  @Test
  void aStatusMadeFromAFailureWhoseCauseIsAnAllocationRefusalMapsBackUnchanged() {
    GatewayException unknown = new GatewayException(Cause.UNKNOWN_OUTCOME,
        "admission.unknown_outcome", "outcome unknown",
        new RuntimeException("send", new org.apache.arrow.memory.OutOfMemoryException("limit")));
    StatusRuntimeException once = mapper.toGrpc(unknown);
    assertEquals(Status.Code.UNAVAILABLE, once.getStatus().getCode());
    StatusRuntimeException twice = mapper.toGrpc(once);
    assertEquals(once.getStatus().getDescription(), twice.getStatus().getDescription());
    assertEquals("admission.unknown_outcome", ErrorMapper.gatewayFailure(once).code(),
        "not flight.allocation");
    // A refusal on its own still is one.
    assertEquals("flight.allocation", ErrorMapper.gatewayFailure(
        new RuntimeException("wrapped", new org.apache.arrow.memory.OutOfMemoryException("limit")))
        .code());
  }
}
