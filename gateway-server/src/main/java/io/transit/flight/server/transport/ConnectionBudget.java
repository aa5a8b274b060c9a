package io.transit.flight.server.transport;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerTransportFilter;
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
 * connection's Netty event loop. A connection that finds no free slot holds none: each call on it
 * looks for one again ({@link #interceptCall}, on the service executor), and one that finds none
 * is closed with RESOURCE_EXHAUSTED {@code transport.connections_exhausted} before authentication
 * or any Flight code runs. A connection an edge keeps open and sends calls over is thus served
 * again as soon as a slot frees, not refused until it closes; one whose calls all stay refused is
 * closed by {@link AuthenticationBudget} (none of them authenticates). A peer that never finishes
 * the handshake is bounded by {@code handshake_timeout_ms} instead.
 *
 * <p>The connection's slot state ({@link #SLOT}, in its transport attributes) moves only forward
 * by compare-and-set: REFUSED to HELD (a call found a slot), REFUSED or HELD to ENDED (the
 * transport ended; a HELD slot is given back then, once). A call that takes a slot for a
 * connection that ended meanwhile, or that another call already gave one, gives its own back.
 */
public final class ConnectionBudget extends ServerTransportFilter implements ServerInterceptor {
  /** The connection's slot: {@link #REFUSED}, {@link #HELD} or {@link #ENDED}. */
  static final Attributes.Key<AtomicInteger> SLOT = Attributes.Key.create("transit.connection.slot");
  static final int REFUSED = 0;
  static final int HELD = 1;
  static final int ENDED = 2;

  private final int max;
  private final ErrorMapper errors;
  // Event loops (ready, terminated) and the service executor (calls): compare-and-set only.
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
    AtomicInteger slot = new AtomicInteger(tryAcquire() ? HELD : REFUSED);
    return attrs.toBuilder().set(SLOT, slot).build();
  }

  @Override
  public void transportTerminated(Attributes attrs) {
    AtomicInteger slot = attrs == null ? null : attrs.get(SLOT);
    if (slot != null && slot.getAndSet(ENDED) == HELD) {
      live.decrementAndGet();
    }
  }

  /** Whether the connection of {@code slot} holds a slot now, taking a free one if it had none. */
  private boolean holds(AtomicInteger slot) {
    int state = slot.get();
    if (state != REFUSED) {
      return state == HELD;
    }
    if (!tryAcquire()) {
      return false;
    }
    if (slot.compareAndSet(REFUSED, HELD)) {
      return true;
    }
    // Ended meanwhile, or another call on it took one first: this one goes back.
    live.decrementAndGet();
    return slot.get() == HELD;
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
    AtomicInteger slot = call.getAttributes().get(SLOT);
    if (slot != null && !holds(slot)) {
      errors.close(call, GatewayException.of(Cause.BUDGET_EXHAUSTED,
              "transport.connections_exhausted",
              "the gateway serves at most " + max + " connections; retry later")
          .with("limit", max)
          .with("required", max + 1)
          // Nothing about the request was wrong: the same call on a later connection can pass.
          .withOutcome(Outcome.NOT_ADMITTED)
          .withActions(Action.RETRY_LATER));
      return new ServerCall.Listener<>() {};
    }
    return next.startCall(call, headers);
  }
}
