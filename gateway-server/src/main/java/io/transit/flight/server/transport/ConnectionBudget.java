package io.transit.flight.server.transport;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerTransportFilter;
import io.grpc.StatusRuntimeException;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@code max_connections} budget, shared by every listener (TCP and Unix socket).
 *
 * <p>A connection takes a slot when its HTTP/2 (and TLS) handshake is done ({@link
 * #transportReady}) and gives it back when it ends ({@link #transportTerminated}); both run on the
 * connection's Netty event loop. A connection that finds no free slot is marked refused in its
 * transport attributes and holds no slot: every call on it is closed with RESOURCE_EXHAUSTED
 * {@code transport.connections_exhausted} before authentication or any Flight code runs, and
 * {@link AuthenticationBudget} closes it (none of its calls authenticates). A peer that never finishes the handshake
 * is bounded by {@code handshake_timeout_ms} instead. {@link #interceptCall} runs on the thread
 * that delivers the call's headers and only reads the immutable attributes.
 */
public final class ConnectionBudget extends ServerTransportFilter implements ServerInterceptor {
  static final Attributes.Key<Boolean> ADMITTED = Attributes.Key.create("transit.connection.admitted");

  private final int max;
  private final ErrorMapper errors;
  private final AtomicInteger live = new AtomicInteger();
  private final AtomicInteger peak = new AtomicInteger();

  private final AuthenticationBudget authentication;

  public ConnectionBudget(int max, ErrorMapper errors, AuthenticationBudget authentication) {
    if (max < 1) {
      throw new IllegalArgumentException("max: " + max + " (expected: >= 1)");
    }
    this.max = max;
    this.errors = errors;
    this.authentication = authentication;
  }

  /** How long a TCP connection may hold a slot without an authenticated call. */
  public AuthenticationBudget authentication() {
    return authentication;
  }

  /** Connections currently holding a slot. */
  public int live() {
    return live.get();
  }

  /** The most connections that held a slot at once since start. */
  public int peak() {
    return peak.get();
  }

  @Override
  public Attributes transportReady(Attributes attrs) {
    boolean admitted = tryAcquire();
    return attrs.toBuilder().set(ADMITTED, admitted).build();
  }

  @Override
  public void transportTerminated(Attributes attrs) {
    if (attrs != null && Boolean.TRUE.equals(attrs.get(ADMITTED))) {
      live.decrementAndGet();
    }
  }

  private boolean tryAcquire() {
    while (true) {
      int n = live.get();
      if (n >= max) {
        return false;
      }
      if (live.compareAndSet(n, n + 1)) {
        peak.accumulateAndGet(n + 1, Math::max);
        return true;
      }
    }
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    if (Boolean.FALSE.equals(call.getAttributes().get(ADMITTED))) {
      StatusRuntimeException s = errors.toGrpc(GatewayException.of(Cause.BUDGET_EXHAUSTED,
              "transport.connections_exhausted",
              "the gateway serves at most " + max + " connections; retry later")
          .with("limit", max)
          .with("required", max + 1)
          // Nothing about the request was wrong: the same call on a later connection can pass.
          .withOutcome(Outcome.NOT_ADMITTED)
          .withActions(Action.RETRY_LATER));
      call.close(s.getStatus(), s.getTrailers() != null ? s.getTrailers() : new Metadata());
      return new ServerCall.Listener<>() {};
    }
    return next.startCall(call, headers);
  }
}
