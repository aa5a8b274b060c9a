package io.transit.flight.server.ops;

import io.grpc.Context;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import io.transit.flight.server.auth.AuthInterceptor;
import io.transit.flight.server.auth.CallerBinding;
import java.net.SocketAddress;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.arrow.flight.impl.FlightServiceGrpc;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * Observes every RPC once, from its stream opening to its close: a {@link ServerStreamTracer}
 * (wire bytes, messages, final status, and the {@link RequestRecord} put into the call's context)
 * plus two interceptors for the Flight service: {@link #requestId()} outermost (returns the
 * request id to the client in the {@value #REQUEST_ID} header, or trailer when the call ends
 * before headers) and {@link #callerTap()} innermost, after authentication (names the caller).
 * On close it writes the access-log line, feeds the metrics, and logs authentication failures,
 * rate-limited.
 *
 * <p>Threads: the tracer's callbacks run on gRPC transport and executor threads, one stream at a
 * time per tracer instance; the shared state is the thread-safe {@link GatewayMetrics}, {@link
 * AuthFailureLog} and {@link AnonymousAccessLines}.
 */
public final class RpcObserver extends ServerStreamTracer.Factory {
  public static final String REQUEST_ID = "x-transit-request-id";
  static final Metadata.Key<String> REQUEST_ID_KEY =
      Metadata.Key.of(REQUEST_ID, Metadata.ASCII_STRING_MARSHALLER);
  private static final Logger access = LoggerFactory.getLogger("transit.access");
  /** Descriptions of refusals start with their diagnostic code: "query.sequence_gap: ...". */
  private static final Pattern CODE = Pattern.compile("^([a-z][a-z0-9_]*\\.[a-z0-9_.]+):");
  private static final String DO_GET = "arrow.flight.protocol.FlightService/DoGet";
  private static final String HEALTH = "grpc.health.v1.Health/";
  private static final String STATEMENT_INFO = "arrow.flight.protocol.FlightService/GetFlightInfo";
  /**
   * The full method names the daemon serves: the Flight service's and the health service's. A
   * fixed list rather than a mark set by the fallback for unknown paths: a stream the caller
   * resets before gRPC looks its method up closes without any handler running, and its invented
   * name would then become a label.
   */
  private static final Set<String> SERVED = Stream.of(FlightServiceGrpc.getServiceDescriptor(),
          HealthGrpc.getServiceDescriptor())
      .flatMap(d -> d.getMethods().stream()).map(MethodDescriptor::getFullMethodName)
      .collect(Collectors.toUnmodifiableSet());
  /** The metrics' method label of every call to a path the daemon does not serve. */
  static final String UNKNOWN = "unknown";
  /** An unserved path is logged whole up to here: the caller chose its length. */
  private static final int MAX_LOGGED_METHOD = 128;

  /** Access lines a second for calls without a caller ({@link AnonymousAccessLines}). */
  static final int ANONYMOUS_LINES_PER_SECOND = 100;

  private final GatewayMetrics metrics;
  // Any thread: RPC streams created and not yet closed (the stop asks whether it cuts any).
  private final java.util.concurrent.atomic.AtomicLong open =
      new java.util.concurrent.atomic.AtomicLong();
  private final AuthFailureLog authFailures;
  private final boolean accessLog;
  private final AnonymousAccessLines anonymous =
      new AnonymousAccessLines(ANONYMOUS_LINES_PER_SECOND, System.nanoTime());

  public RpcObserver(GatewayMetrics metrics, AuthFailureLog authFailures, boolean accessLog) {
    this.metrics = metrics;
    this.authFailures = authFailures;
    this.accessLog = accessLog;
  }

  @Override
  public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
    RequestRecord record = new RequestRecord(fullMethodName, System.nanoTime(), metrics::admission);
    open.incrementAndGet();
    return new ServerStreamTracer() {
      @Override
      public Context filterContext(Context context) {
        return context.withValue(RequestRecord.KEY, record);
      }

      @Override
      public void serverCallStarted(ServerCallInfo<?, ?> info) {
        SocketAddress peer = info.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
        record.peer = peer != null ? peer.toString() : "";
      }

      @Override
      public void outboundMessage(int seqNo) {
        record.messagesOut.incrementAndGet();
      }

      @Override
      public void outboundWireSize(long bytes) {
        record.bytesOut.addAndGet(bytes);
      }

      @Override
      public void inboundWireSize(long bytes) {
        record.bytesIn.addAndGet(bytes);
      }

      @Override
      public void streamClosed(Status status) {
        open.decrementAndGet();
        finished(record, status);
      }
    };
  }

  /** RPCs whose stream is open now, any thread: the stop's test of whether it cuts a call. */
  public long openCalls() {
    return open.get();
  }

  /**
   * The call's status as its client saw it. gRPC reports a stream the gateway reset itself (an
   * unread stream's end budget, docs/limits.md {@code credit_stall_ms}) as INTERNAL "http2
   * exception", a status the gateway keeps for its own defects; the client saw the reset's
   * CANCEL, and the log and metrics say so.
   */
  static Status.Code status(Status status) {
    if (status.getCode() == Status.Code.INTERNAL
        && status.getCause() instanceof Http2Exception e && e.error() == Http2Error.CANCEL) {
      return Status.Code.CANCELLED;
    }
    return status.getCode();
  }

  private void finished(RequestRecord r, Status status) {
    long nanos = System.nanoTime() - r.startNanos;
    String method = r.method.substring(r.method.lastIndexOf('/') + 1);
    // A path the daemon does not serve is the caller's to choose: one label for all of them, or
    // every invented name would be a new timer (heap and scrape growing with each call).
    boolean served = SERVED.contains(r.method);
    String label = served ? method : UNKNOWN;
    String code = status(status).name();
    String diagnostic = r.diagnostic;
    if (diagnostic == null && status.getDescription() != null) {
      Matcher m = CODE.matcher(status.getDescription());
      diagnostic = m.find() ? m.group(1) : null;
    }
    metrics.rpc(label, code, nanos);
    String admission = r.close();
    if (admission != null) {
      metrics.admission(admission);
      if (r.method.equals(STATEMENT_INFO)) {
        metrics.statement(admission, nanos);
      }
    }
    if (r.method.equals(DO_GET) && r.messagesOut.get() > 0) {
      // The first message of a DoGet stream is the schema; every later one is a record batch.
      metrics.streamed(r.bytesOut.get(), r.messagesOut.get() - 1);
    }
    if (status.getCode() == Status.Code.UNAUTHENTICATED) {
      authFailures.failed(r.peer, method);
    }
    if (!accessLog || r.method.startsWith(HEALTH)) {
      return; // an edge's health probes every few seconds would drown the access log
    }
    if (r.caller == null) {
      long suppressed = anonymous.admit(System.nanoTime());
      if (suppressed == AnonymousAccessLines.SUPPRESS) {
        return;
      }
      if (suppressed > 0) {
        access.atInfo().addKeyValue("caller", "-").addKeyValue("suppressed", suppressed)
            .log("access lines of calls without a caller not written (more than "
                + ANONYMOUS_LINES_PER_SECOND + " a second)");
      }
    }
    LoggingEventBuilder line = access.atInfo()
        .addKeyValue("request_id", r.id)
        .addKeyValue("caller", r.caller != null ? r.caller : "-")
        .addKeyValue("method", served ? method : LoggedText.of(r.method, MAX_LOGGED_METHOD))
        .addKeyValue("status", code)
        .addKeyValue("code", diagnostic != null ? diagnostic : "-")
        .addKeyValue("duration_ms", TimeUnit.NANOSECONDS.toMicros(nanos) / 1000.0)
        .addKeyValue("bytes_in", r.bytesIn.get())
        .addKeyValue("bytes_out", r.bytesOut.get());
    if (r.correlation != null) {
      line = line.addKeyValue("correlation", r.correlation);
    }
    if (admission != null) {
      line = line.addKeyValue("admission", admission);
    }
    line.addKeyValue("peer", r.peer != null ? r.peer : "-").log("rpc");
  }

  /** Outermost on the Flight service: puts the request id on the response. */
  public ServerInterceptor requestId() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        RequestRecord r = RequestRecord.current();
        if (r == null) {
          return next.startCall(call, headers);
        }
        return next.startCall(new SimpleForwardingServerCall<>(call) {
          private boolean headersSent; // the call's serialized thread only

          @Override
          public void sendHeaders(Metadata h) {
            h.put(REQUEST_ID_KEY, r.id);
            headersSent = true;
            super.sendHeaders(h);
          }

          @Override
          public void close(Status status, Metadata trailers) {
            if (headersSent) {
              super.close(status, trailers);
              return;
            }
            // A copy: a refusal's trailers may be an instance shared with other calls.
            Metadata withId = new Metadata();
            withId.merge(trailers);
            withId.put(REQUEST_ID_KEY, r.id);
            super.close(status, withId);
          }
        }, headers);
      }
    };
  }

  /** Innermost, after authentication: names the caller in the record. */
  public ServerInterceptor callerTap() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        RequestRecord r = RequestRecord.current();
        CallerBinding caller = AuthInterceptor.CALLER.get();
        if (r != null && caller != null) {
          r.caller = caller.name();
        }
        return next.startCall(call, headers);
      }
    };
  }
}
