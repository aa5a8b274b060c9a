package io.transit.flight.server.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.netty.shaded.io.netty.channel.embedded.EmbeddedChannel;
import java.io.InputStream;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The unauthenticated-connection budget's timer, on Netty's embedded channels: {@code boss} stands
 * in for the listener's server channel (its event loop runs the timers, and {@code
 * runScheduledPendingTasks} answers -1 once none is queued) and each accepted connection is an
 * {@link EmbeddedChannel} read by it. The real listener is covered by test_connection_slots.py
 * (connections without a credential closed, the slots they held given back).
 */
class AuthenticationBudgetTest {
  private static final long BUDGET_MS = 600_000;
  private final AuthenticationBudget budget = new AuthenticationBudget(BUDGET_MS);
  private final EmbeddedChannel boss = new EmbeddedChannel(budget.watcher());

  private EmbeddedChannel accepted() {
    EmbeddedChannel child = new EmbeddedChannel();
    boss.writeInbound(child);
    return child;
  }

  /** Time until the boss loop's next timer, or -1 when none is queued. */
  private long nextTimer() {
    return boss.runScheduledPendingTasks();
  }

  @Test
  void aConnectionWithoutACredentialIsClosedAtTheBudget() {
    boss.freezeTime();
    EmbeddedChannel child = accepted();
    assertTrue(nextTimer() > 0);
    boss.advanceTimeBy(BUDGET_MS, TimeUnit.MILLISECONDS);
    assertEquals(-1, nextTimer());
    assertFalse(child.isOpen());
    assertEquals(1, budget.closedUnauthenticated());
  }

  /**
   * A connection that closed (its client made one call and went away) leaves no timer behind:
   * until 2026-12-07 each one stayed queued for the whole budget and kept its closed channel
   * reachable, so a daemon accepting many short connections under a long budget grew its heap
   * with every connection of the last budget's length (3,000 connections under 10 minutes: 3,000
   * channels held after a full GC, old generation +3.9 MB).
   */
  @Test
  void aClosedConnectionLeavesNoTimerBehind() {
    EmbeddedChannel child = accepted();
    assertTrue(nextTimer() > 0);
    child.close();
    assertEquals(-1, nextTimer(), "the closed connection's timer is still queued");
    assertEquals(0, budget.closedUnauthenticated());
  }

  /** A connection whose call authenticated keeps serving and its timer goes. */
  @Test
  void anAuthenticatedConnectionLeavesNoTimerBehindAndStaysOpen() {
    boss.freezeTime();
    EmbeddedChannel child = accepted();
    Attributes attrs = Attributes.newBuilder()
        .set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, child.remoteAddress()).build();
    budget.interceptCall(new InterceptedCall(attrs), new Metadata(), next());
    assertEquals(-1, nextTimer(), "the authenticated connection's timer is still queued");
    boss.advanceTimeBy(BUDGET_MS, TimeUnit.MILLISECONDS);
    nextTimer();
    assertTrue(child.isOpen());
    assertEquals(0, budget.closedUnauthenticated());
  }

  private static ServerCallHandler<InputStream, InputStream> next() {
    return (call, headers) -> new ServerCall.Listener<>() {};
  }
}
