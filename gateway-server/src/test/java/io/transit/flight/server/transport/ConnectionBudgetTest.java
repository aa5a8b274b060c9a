package io.transit.flight.server.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.transit.flight.diagnostic.ErrorMapper;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The connection budget's slots, driven through its transport filter and interceptor. {@link
 * InterceptedCall} is a hand-made ServerCall standing in for a gRPC call on a Netty connection: it
 * carries the transport attributes the filter gave that connection and records the status the
 * interceptor closes it with, so an ordering no real client can set up on demand (a refused
 * connection kept open, a slot taken for a connection that already ended) is exact here. The real
 * transport path is covered by the Python integration tests: test_transport_budgets.py
 * (test_max_connections_refuses_the_excess_connection: the excess connection refused, a freed slot
 * served) and test_connection_slots.py (every slot held by real HTTP/2 connections, freed by the
 * unauthenticated budget, the accounting back to zero).
 */
class ConnectionBudgetTest {
  private final ConnectionBudget budget =
      new ConnectionBudget(1, new ErrorMapper(), new AuthenticationBudget(10_000));
  private final AtomicInteger started = new AtomicInteger();
  private final ServerCallHandler<InputStream, InputStream> next = (call, headers) -> {
    started.incrementAndGet();
    return new ServerCall.Listener<>() {};
  };

  /** A call on the connection of {@code attrs}; its close status, or null when it was started. */
  private Status call(Attributes attrs) {
    InterceptedCall call = new InterceptedCall(attrs);
    budget.interceptCall(call, new Metadata(), next);
    return call.closed();
  }

  /**
   * An edge keeps a connection that was refused a slot and sends its next calls over it: they are
   * served once a slot is free, not refused until that connection closes.
   */
  @Test
  void aRefusedConnectionIsServedOnceASlotFrees() {
    Attributes a = budget.transportReady(Attributes.EMPTY);
    Attributes b = budget.transportReady(Attributes.EMPTY);
    assertNull(call(a));
    Status refused = call(b);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.getCode());
    assertTrue(refused.getDescription().startsWith("transport.connections_exhausted"),
        refused.getDescription());
    budget.transportTerminated(a);
    assertEquals(0, budget.live());
    assertNull(call(b), "the freed slot goes to the connection still open");
    assertEquals(1, budget.live());
    assertNull(call(b));
    Attributes c = budget.transportReady(Attributes.EMPTY);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, call(c).getCode());
    budget.transportTerminated(b);
    budget.transportTerminated(c);
    assertEquals(0, budget.live(), "each slot given back once");
    assertEquals(3, started.get());
  }

  /** A call that finds a slot for a connection that ended meanwhile gives it back. */
  @Test
  void aSlotTakenForAnEndedConnectionGoesBack() {
    Attributes a = budget.transportReady(Attributes.EMPTY);
    Attributes b = budget.transportReady(Attributes.EMPTY);
    budget.transportTerminated(b); // refused, then ended with its call still on its way
    budget.transportTerminated(a);
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, call(b).getCode());
    assertEquals(0, budget.live());
    assertEquals(0, started.get());
  }
}
