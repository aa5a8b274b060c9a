package io.transit.flight.server.request;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.server.auth.AuthInterceptor;
import io.transit.flight.server.auth.CallerBinding;
import java.io.InputStream;
import org.apache.arrow.flight.impl.Flight;

/**
 * Request messages are parsed here, not by gRPC: a message that does not parse (malformed
 * protobuf, nesting past protobuf's recursion limit, a FlightData frame Arrow cannot read) ends
 * its call INVALID_ARGUMENT {@code flight.invalid_protobuf} with a bounded message and the
 * diagnostic trailer, and is logged as one rate-limited line ({@link ClientFaultLog}).
 *
 * <p>A unary or server-streaming call with no request message, or with a second one, ends the
 * same way (gRPC's own handler would answer INTERNAL without the trailer), and the method never
 * runs. DoPut and DoExchange frames are checked and dropped ({@code checkFlightData}).
 *
 * <p>Why: gRPC parses a request with its method's marshaller before any application code, and
 * a parse failure there answers UNKNOWN "Application error processing RPC" and logs the whole
 * exception (a ~46 KB recursion stack trace per request for a deeply nested descriptor).
 * {@link #guard} gives every method a pass-through {@code InputStream} marshaller for requests
 * (responses keep theirs) and parses with the method's own marshaller inside the call's
 * listener, where the failure can be answered. Protobuf requests are parsed from gRPC's own
 * stream; FlightData requests from a checked copy (see {@code checkedFlightData}).
 *
 * <p>Threads: the listener's callbacks run one at a time on the call's serialized executor. The
 * call wrapper's {@code close} may also be invoked by the service from another thread (a
 * producer ending a stream); it is synchronized so that only the first close reaches gRPC, and
 * its {@code closed} flag is volatile because the listener reads it. Ownership: each request
 * {@code InputStream} belongs to the listener until parsed; one that is not parsed (the call
 * already closed, or the parse failed) is closed here.
 */
public final class MalformedRequests {
  /** Hands gRPC's request stream over unparsed (also {@link UnknownMethods}', and tests'). */
  public static final MethodDescriptor.Marshaller<InputStream> RAW =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(InputStream value) {
          return value;
        }

        @Override
        public InputStream parse(InputStream stream) {
          return stream;
        }
      };

  private MalformedRequests() {}

  /** {@code service} with every request parsed inside the call, failures answered as above. */
  public static ServerServiceDefinition guard(ServerServiceDefinition service, ErrorMapper errors,
      ClientFaultLog faults, int maxMessageBytes) {
    ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
    for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
      b.addMethod(guardMethod(m, errors, faults, maxMessageBytes));
    }
    return b.build();
  }

  private static <Q, R> ServerMethodDefinition<InputStream, R> guardMethod(
      ServerMethodDefinition<Q, R> def, ErrorMapper errors, ClientFaultLog faults,
      int maxMessageBytes) {
    MethodDescriptor<Q, R> typed = def.getMethodDescriptor();
    MethodDescriptor<InputStream, R> raw =
        typed.toBuilder(RAW, typed.getResponseMarshaller()).build();
    ServerCallHandler<InputStream, R> handler = (call, headers) -> {
      Typed<Q, R> inner = new Typed<>(call, typed);
      ServerCall.Listener<Q> next = def.getServerCallHandler().startCall(inner, headers);
      return new Parsing<>(inner, next, typed, errors, faults, maxMessageBytes);
    };
    return ServerMethodDefinition.create(raw, handler);
  }

  /** The listener that parses each message; after a refusal it passes on only the call's end. */
  private static final class Parsing<Q, R> extends ServerCall.Listener<InputStream> {
    private final Typed<Q, R> call;
    private final ServerCall.Listener<Q> next;
    private final MethodDescriptor<Q, R> method;
    private final ErrorMapper errors;
    private final ClientFaultLog faults;
    private final int maxMessageBytes;
    private final boolean flightData;
    /** A unary or server-streaming method: exactly one request message, then the half-close. */
    private final boolean oneMessage;
    // Listener callbacks only (serialized): messages seen, and whether this guard refused.
    private int messages;
    private boolean refused;

    Parsing(Typed<Q, R> call, ServerCall.Listener<Q> next, MethodDescriptor<Q, R> method,
        ErrorMapper errors, ClientFaultLog faults, int maxMessageBytes) {
      this.call = call;
      this.next = next;
      this.method = method;
      this.errors = errors;
      this.faults = faults;
      this.maxMessageBytes = maxMessageBytes;
      // Protobuf messages have protobuf's marshaller; FlightData has Arrow's own.
      this.flightData =
          !(method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller);
      this.oneMessage = method.getType().clientSendsOneMessage();
    }

    @Override
    public void onMessage(InputStream message) {
      if (call.closed) {
        close(message);
        return;
      }
      if (oneMessage && ++messages > 1) {
        // gRPC's unary handler would answer INTERNAL "Too many requests", without the trailer.
        close(message);
        refuse("flight.invalid_protobuf", "more than one request message for "
            + method.getBareMethodName());
        return;
      }
      if (flightData) {
        checkFlightData(message);
        return;
      }
      Q parsed;
      try {
        parsed = method.parseRequest(message);
      } catch (RuntimeException | StackOverflowError e) {
        close(message);
        if (Status.fromThrowable(e).getCode() == Status.Code.RESOURCE_EXHAUSTED) {
          // A compressed message that inflates past the bound: gRPC's decompressing stream
          // stops at max_inbound_message_bytes while it is read here.
          refuse(tooLarge());
          return;
        }
        refuse("flight.invalid_protobuf", "the request message is not valid protobuf for "
            + method.getBareMethodName());
        return;
      }
      if (parsed instanceof Flight.FlightDescriptor fd
          && fd.getType() != Flight.FlightDescriptor.DescriptorType.CMD
          && fd.getType() != Flight.FlightDescriptor.DescriptorType.PATH) {
        // Arrow cannot represent any other type and would answer INTERNAL.
        refuse("flight.invalid_descriptor", "the descriptor's type is neither CMD nor PATH");
        return;
      }
      next.onMessage(parsed);
    }

    /**
     * Only DoPut and DoExchange carry FlightData requests, and the profile answers both
     * UNIMPLEMENTED without reading a frame: a frame is checked as plain protobuf (every length
     * against the bytes present; a malformed one is refused here) and then dropped, never handed
     * to Arrow. Arrow's marshaller allocates a body buffer of the declared length before reading
     * it (a lying length would leak Arrow memory), and its reader throws past this guard on a
     * valid frame it cannot represent (a descriptor of no type, a schema of an unknown type:
     * UNKNOWN and a logged stack trace, when the frame beat the UNIMPLEMENTED answer).
     */
    private void checkFlightData(InputStream message) {
      try (message) {
        Flight.FlightData.parseFrom(message.readAllBytes());
      } catch (RuntimeException | java.io.IOException e) {
        if (Status.fromThrowable(e).getCode() == Status.Code.RESOURCE_EXHAUSTED) {
          refuse(tooLarge());
        } else {
          refuse("flight.invalid_protobuf", "the request message is not valid protobuf for "
              + method.getBareMethodName());
        }
      }
    }

    private GatewayException tooLarge() {
      return GatewayException.of(Cause.BUDGET_EXHAUSTED, "flight.message_too_large",
              "the request message, decompressed, is over max_inbound_message_bytes")
          .with("bound", "message").with("limit", maxMessageBytes)
          .withOutcome(Outcome.NOT_ADMITTED).withActions(Action.CHANGE_REQUEST);
    }

    private void refuse(String code, String message) {
      refuse(GatewayException.of(Cause.INVALID_PROTOBUF, code, message));
    }

    private void refuse(GatewayException refusal) {
      refused = true;
      CallerBinding caller = AuthInterceptor.CALLER.get();
      faults.fault(caller != null ? caller.name() : "-", method.getFullMethodName(),
          refusal.code());
      errors.close(call, refusal);
    }

    private static void close(InputStream in) {
      try {
        in.close();
      } catch (java.io.IOException | RuntimeException ignored) {
        // A stream that cannot be closed holds only its own buffer; gRPC frees the frame.
      }
    }

    // The end of the client's messages and readiness reach the service: Arrow's stream readers
    // free what they queued only when they see them. A close it makes after a refusal (a unary
    // handler missing its request) is dropped by the call wrapper. A one-message method's end
    // is held back after a refusal, since its handler would run the method on the request it
    // already has, and it is refused when no message came (gRPC would answer INTERNAL).
    @Override
    public void onHalfClose() {
      if (oneMessage && !refused && !call.closed && messages == 0) {
        refuse("flight.invalid_protobuf", "no request message for "
            + method.getBareMethodName());
      }
      if (oneMessage && refused) {
        return;
      }
      next.onHalfClose();
    }

    @Override
    public void onReady() {
      next.onReady();
    }

    @Override
    public void onCancel() {
      next.onCancel();
    }

    @Override
    public void onComplete() {
      next.onComplete();
    }
  }

  /**
   * The call as the service sees it: the typed method descriptor, everything else the raw call.
   * Records its own close so the listener stops delivering messages after any close.
   */
  private static final class Typed<Q, R> extends ForwardingServerCall<Q, R> {
    private final ServerCall<Q, R> raw;
    private final MethodDescriptor<Q, R> method;
    volatile boolean closed;

    @SuppressWarnings("unchecked")
    Typed(ServerCall<InputStream, R> raw, MethodDescriptor<Q, R> method) {
      // Only the request type differs, and a server call never takes a request as an argument:
      // every method forwarded to it is independent of Q.
      this.raw = (ServerCall<Q, R>) (ServerCall<?, R>) raw;
      this.method = method;
    }

    @Override
    protected ServerCall<Q, R> delegate() {
      return raw;
    }

    @Override
    public synchronized void close(Status status, Metadata trailers) {
      // The service may close (e.g. a producer thread) while the listener refuses a message:
      // only the first close reaches gRPC, which refuses a second.
      if (closed) {
        return;
      }
      closed = true;
      raw.close(status, trailers);
    }

    @Override
    public MethodDescriptor<Q, R> getMethodDescriptor() {
      return method;
    }
  }
}
