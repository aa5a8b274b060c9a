package io.transit.flight.diagnostic;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.ErrorFlightMetadata;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns any failure into what the caller sees: the cause's gRPC status, a bounded {@code
 * "code: message"} ({@link GrpcMessage}) and, when it fits the metadata budget, the Diagnostic
 * v1 bytes in the {@value #TRAILER_KEY} trailer. Rules ({@code docs/status.md}, "Mapping"):
 *
 * <ul>
 *   <li>{@link GatewayException}: its cause's status, its code and message, its diagnostic.
 *       {@link Cause#UNAUTHENTICATED} gets a fixed message and a minimal trailer (fixed code,
 *       cause and message; no identity, facts or stage, since the caller is unknown); {@link
 *       Cause#ACCESS_DENIED} and {@link Cause#TICKET_SCOPE} keep the trailer without identity
 *       or facts. {@link Cause#INTERNAL} is logged with a reference.
 *   <li>A {@link StatusRuntimeException} or {@link FlightRuntimeException} this mapper made
 *       (its status cause is the original {@code GatewayException}) maps that exception again,
 *       so mapping is idempotent.
 *   <li>Any other status exception keeps only its code's meaning: cancelled, deadline,
 *       unauthenticated, permission denied, unimplemented, invalid argument, resource exhausted
 *       and unavailable become the matching cause with a generic message; everything else is
 *       INTERNAL. Its description is never forwarded: it is not known to be safe.
 *   <li>Any other throwable is INTERNAL with a generic message carrying a random reference; the
 *       throwable is logged with the same reference for operators.
 * </ul>
 *
 * Building the diagnostic can fail (e.g. a malformed code); the status and message are then
 * sent without the trailer. Stateless apart from its configuration; any thread.
 */
public final class ErrorMapper {
  /** The trailer carrying Diagnostic v1 bytes. */
  public static final String TRAILER_KEY = "transit-diagnostic-bin";

  public static final Metadata.Key<byte[]> TRAILER =
      Metadata.Key.of(TRAILER_KEY, Metadata.BINARY_BYTE_MARSHALLER);

  /** Room for the largest diagnostic (4096 bytes as 5462 base64 bytes) plus its key. */
  public static final int DEFAULT_TRAILER_BUDGET = 6144;

  /** HTTP/2 counts 32 bytes per header field besides its name and value (RFC 7541 §4.1). */
  private static final int HEADER_FIELD_OVERHEAD = 32;

  // What the gateway takes, in the same words for every caller: a Basic login learns its
  // mistake, and nothing tells which check failed.
  private static final String UNAUTHENTICATED_TEXT =
      "a valid credential is required (a Bearer authorization header on every call)";
  static final String UNAUTHENTICATED_MESSAGE = "auth.unauthenticated: " + UNAUTHENTICATED_TEXT;

  /** Every unauthenticated failure's one envelope: not even which check failed is told. */
  private static final GatewayException UNAUTHENTICATED_ENVELOPE =
      GatewayException.of(Cause.UNAUTHENTICATED, "auth.unauthenticated", UNAUTHENTICATED_TEXT);

  private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);

  // Encoded once, at class load: what a stream ends with when its own mapping failed, so that the
  // caller still reads a Diagnostic (the failure itself is in the log, where the mapper's is).
  private static final StatusRuntimeException[] LAST_RESORT = {
    lastResortStatus(Outcome.UNKNOWN), lastResortStatus(Outcome.INCOMPLETE)};

  private final int trailerBudget;

  /** A mapper whose trailer budget fits every diagnostic. */
  public ErrorMapper() {
    this(DEFAULT_TRAILER_BUDGET);
  }

  /**
   * @param trailerBudget the most HTTP/2 header-list bytes the trailer may take (name, base64
   *     value and 32 bytes of overhead); a larger diagnostic is left out, the status kept
   */
  public ErrorMapper(int trailerBudget) {
    if (trailerBudget < 0) {
      throw new IllegalArgumentException("trailerBudget: " + trailerBudget + " (expected: >= 0)");
    }
    this.trailerBudget = trailerBudget;
  }

  /**
   * The gRPC form, for interceptors and for Flight producers: Arrow's service passes a {@code
   * StatusRuntimeException} thrown by a producer (or given to {@code listener.error}) to the
   * caller unchanged, so every status code, including ABORTED, FAILED_PRECONDITION,
   * OUT_OF_RANGE and DATA_LOSS, arrives exactly.
   */
  public StatusRuntimeException toGrpc(Throwable t) {
    GatewayException e = gatewayFailure(t);
    Metadata trailers = new Metadata();
    byte[] detail = trailerBytes(e);
    if (detail != null) {
      trailers.put(TRAILER, detail);
    }
    Status status =
        Status.fromCode(e.kind().code()).withDescription(message(e)).withCause(e);
    return status.asRuntimeException(trailers);
  }

  /**
   * Ends {@code call} with {@code t}'s status and its trailer ({@link #toGrpc}): an interceptor's
   * refusal, made before any handler ran. On the thread the interceptor runs on.
   */
  public void close(ServerCall<?, ?> call, Throwable t) {
    StatusRuntimeException s = toGrpc(t);
    call.close(s.getStatus(), s.getTrailers());
  }

  /**
   * The Flight form. Arrow 18's {@code FlightStatusCode} has no ABORTED, FAILED_PRECONDITION,
   * OUT_OF_RANGE or DATA_LOSS: for those causes the code is Arrow's nearest one (the same a
   * Java Flight client reports for the exact code), so producers should throw {@link
   * #toGrpc} instead; the trailer still names the exact status.
   */
  public FlightRuntimeException toFlight(Throwable t) {
    GatewayException e = gatewayFailure(t);
    ErrorFlightMetadata metadata = new ErrorFlightMetadata();
    byte[] detail = trailerBytes(e);
    if (detail != null) {
      metadata.insert(TRAILER_KEY, detail);
    }
    return new CallStatus(StatusUtils.fromGrpcStatusCode(e.kind().code()))
        .withDescription(message(e))
        .withCause(e)
        .withMetadata(metadata)
        .toRuntimeException();
  }

  /**
   * INTERNAL {@code gateway.internal} with a trailer encoded at class load, for when mapping a
   * failure failed (a defect in a mapper, an {@code Error}); {@code incomplete} when the caller
   * already holds part of a result. Builds nothing, so it cannot fail the same way. Any thread.
   */
  public static StatusRuntimeException lastResort(boolean incomplete) {
    StatusRuntimeException made = LAST_RESORT[incomplete ? 1 : 0];
    Metadata trailers = new Metadata();
    trailers.merge(made.getTrailers());
    return made.getStatus().asRuntimeException(trailers);
  }

  private static StatusRuntimeException lastResortStatus(Outcome outcome) {
    GatewayException e = GatewayException.of(
        Cause.INTERNAL, "gateway.internal", "internal error; the failure is in the gateway's log")
        .withOutcome(outcome);
    Metadata trailers = new Metadata();
    trailers.put(TRAILER, Diagnostic.from(e).toJson());
    return Status.INTERNAL.withDescription(message(e)).asRuntimeException(trailers);
  }

  /** The diagnostic bytes {@code t} would carry, or null when it carries none. */
  public byte[] diagnosticBytes(Throwable t) {
    return trailerBytes(gatewayFailure(t));
  }

  private static String message(GatewayException e) {
    if (e.kind() == Cause.UNAUTHENTICATED) {
      return UNAUTHENTICATED_MESSAGE;
    }
    return GrpcMessage.of(e.code(), e.getMessage());
  }

  private byte[] trailerBytes(GatewayException failure) {
    // An unauthenticated caller gets the fixed minimal envelope: nothing beyond the status.
    GatewayException e = failure.kind() == Cause.UNAUTHENTICATED ? UNAUTHENTICATED_ENVELOPE : failure;
    byte[] json;
    try {
      Diagnostic d = Diagnostic.from(e);
      if (e.kind() == Cause.UNAUTHENTICATED || e.kind() == Cause.ACCESS_DENIED
          || e.kind() == Cause.TICKET_SCOPE) {
        d = d.withoutDisclosure();
      }
      json = d.toJson();
    } catch (RuntimeException buildFailure) {
      LOG.warn("diagnostic for {} left out: {}", e.code(), buildFailure.toString());
      return null;
    }
    return encodedSize(json.length) <= trailerBudget ? json : null;
  }

  /** Header-list bytes of the trailer: key, unpadded base64 value, per-field overhead. */
  static int encodedSize(int valueBytes) {
    int base64 = (valueBytes / 3) * 4 + new int[] {0, 2, 3}[valueBytes % 3];
    return TRAILER_KEY.length() + base64 + HEADER_FIELD_OVERHEAD;
  }

  /**
   * The gateway failure {@code t} stands for, following the passthrough rules above. Mapping a
   * result again gives it back unchanged (an internal failure is logged once, with one reference).
   * Any thread.
   */
  public static GatewayException gatewayFailure(Throwable t) {
    if (t instanceof GatewayException e) {
      if (e.kind() == Cause.INTERNAL && !e.facts().containsKey("reference")) {
        String ref = reference();
        LOG.error("internal failure {} [ref {}]", e.code(), ref, e);
        return e.with("reference", ref);
      }
      return e;
    }
    // An allocation failure is UNAVAILABLE however it arrives: wrapped by a library, or as the
    // JVM's own error (Netty's direct memory; the heap's ends the process, ExitOnOutOfMemoryError).
    int depth = 0;
    for (Throwable c = t; c != null && depth < 8; c = c.getCause(), depth++) {
      if (c instanceof GatewayException mine) {
        // A status this mapper made (its cause is the failure it mapped): given back as it was,
        // even when that failure's own cause is an allocation refusal (mapping twice changes
        // nothing; until 2026-12-07 such a status became flight.allocation).
        return gatewayFailure(mine);
      }
      if (c instanceof org.apache.arrow.memory.OutOfMemoryException oom) {
        return allocationFailure(oom,
            "an Arrow allocation exceeded its allocator's configured limit");
      }
      if (c instanceof OutOfMemoryError) {
        LOG.warn("memory outside the Arrow allocators was exhausted: {}", c.toString());
        return GatewayException.of(Cause.TRANSPORT, "flight.allocation",
            "memory outside the Arrow allocators was exhausted");
      }
    }
    if (t instanceof StatusRuntimeException s) {
      return foreignStatus(s.getStatus().getCode(), s.getStatus().getCause(), t);
    }
    if (t instanceof FlightRuntimeException f) {
      return foreignStatus(StatusUtils.toGrpcStatusCode(f.status().code()), f.status().cause(), t);
    }
    return internal(t);
  }

  /**
   * An allocator limit (root or per stream) is a configured bound, not a defect; the profile maps
   * allocation failure to UNAVAILABLE {@code flight.allocation}. Fact {@code refused_by} names the
   * allocator whose limit refused: {@code root} for the gateway's root allocator, otherwise the
   * child allocator's name (a stream's is {@code stream-N}), so operators know which budget to
   * raise. Arrow records the refusing allocator on every failed allocation.
   */
  public static GatewayException allocationFailure(
      org.apache.arrow.memory.OutOfMemoryException e, String message) {
    GatewayException out = GatewayException.of(Cause.TRANSPORT, "flight.allocation", message);
    org.apache.arrow.memory.BufferAllocator failed = e.getOutcomeDetails()
        .map(org.apache.arrow.memory.AllocationOutcomeDetails::getFailedAllocator).orElse(null);
    if (failed != null) {
      out = out.with("refused_by", failed.getParentAllocator() == null ? "root" : failed.getName());
    }
    return out;
  }

  private static GatewayException foreignStatus(Status.Code code, Throwable cause, Throwable t) {
    if (cause instanceof GatewayException mine) {
      return mine;
    }
    return switch (code) {
      case CANCELLED -> GatewayException.of(Cause.CANCELLED, "flight.cancelled", "the call was cancelled");
      case DEADLINE_EXCEEDED ->
          GatewayException.of(Cause.DEADLINE, "flight.deadline", "the call's deadline passed");
      case UNAUTHENTICATED ->
          GatewayException.of(Cause.UNAUTHENTICATED, "auth.unauthenticated", "unauthenticated");
      case PERMISSION_DENIED ->
          GatewayException.of(Cause.ACCESS_DENIED, "flight.access_denied", "access denied");
      case UNIMPLEMENTED -> GatewayException.of(
          Cause.UNSUPPORTED, "flight.unsupported", "the operation is outside the profile");
      case INVALID_ARGUMENT ->
          GatewayException.of(Cause.INVALID_REQUEST, "flight.invalid_request", "invalid request");
      case RESOURCE_EXHAUSTED -> GatewayException.of(
          Cause.BUDGET_EXHAUSTED, "flight.budget_exhausted", "a bounded resource was exhausted");
      case UNAVAILABLE ->
          GatewayException.of(Cause.TRANSPORT, "flight.transport", "transport unavailable");
      default -> internal(t);
    };
  }

  private static GatewayException internal(Throwable t) {
    String ref = reference();
    LOG.error("internal failure [ref {}]", ref, t);
    return GatewayException.of(Cause.INTERNAL, "gateway.internal", "internal error, reference " + ref)
        .with("reference", ref);
  }

  private static String reference() {
    return String.format("%016x", ThreadLocalRandom.current().nextLong());
  }
}
