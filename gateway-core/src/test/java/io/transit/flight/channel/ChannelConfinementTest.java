package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/**
 * The single-writer rule at the channel's confined entry points, and the readiness gate's fixed
 * (monotonic, taken once) credit-stall deadline, over a real Flight server and client.
 */
class ChannelConfinementTest {

  @Test
  void confinedEntryPointsRefuseCallsOffTheExecutorAndStillFreeTheSource() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      AtomicReference<Throwable> unexpected = new AtomicReference<>();
      fx.script = side -> {
        FlightServerChannel ch = side.channel;
        try {
          // T_caller is not the stream's writer: every confined call must refuse to run here.
          assertThrows(IllegalStateException.class, ch::completeStream);
          assertThrows(IllegalStateException.class,
              () -> ch.sendError(new GatewayException(Cause.INVALID_REQUEST, "query.invalid_plan", "x")));
          VectorSchemaRoot source = batch(ch.allocator(), 10);
          assertThrows(IllegalStateException.class, () -> ch.sendBatch(source, null));
          // sendBatch owned the source from entry: refused or not, it freed it.
          assertEquals(0, ch.allocator().getAllocatedMemory(), "refused sendBatch freed its source");
          assertTrue(ch.isOpen(), "a refused call changes nothing");
        } catch (Throwable t) {
          unexpected.set(t);
        }
        fx.handler.sendResponseBatch(ch, batch(ch.allocator(), 10));
        fx.handler.completeStream(ch);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertNull(unexpected.get(), () -> "off-executor calls: " + unexpected.get());
      assertNull(result.error());
      assertEquals(10, result.rows(), "the stream itself was unaffected");
      assertEquals(1, side.listener.completes.get());
      assertEquals(0, side.listener.opsOffExecutor.get(), "no listener op ran off T_exec");
    }
  }

  @Test
  void wakeUpsWithoutReadinessDoNotExtendTheCreditStallBudget() throws Exception {
    try (FlightFixture fx = new FlightFixture(2, FlightFixture.limits(Duration.ofMillis(300)))) {
      AtomicReference<GatewayException> refused = new AtomicReference<>();
      fx.configure = l -> l.ready = () -> false;
      fx.script = side -> {
        VectorSchemaRoot source = batch(side.channel.allocator(), 10);
        Thread onReady = new Thread(() -> {
          // gRPC-style on-ready callbacks keep waking the gate; readiness never holds.
          while (side.channel.isOpen()) {
            side.listener.fireOnReady();
            // Thousands of wake-ups per budget, without starving the waiter of the gate's lock.
            LockSupport.parkNanos(50_000);
          }
        }, "t-grpc-ready");
        onReady.setDaemon(true);
        onReady.start();
        try {
          fx.handler.sendResponseBatch(side.channel, source);
        } catch (GatewayException e) {
          refused.set(e);
          fx.handler.sendError(side.channel, e);
        }
      };
      // A deadline re-armed by each wake-up would never pass: the client would then hit its
      // own call deadline (TIMED_OUT) instead of the stall below.
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals("flight.credit_stall", refused.get().code());
      assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, result.error().status().code());
      assertEquals(0, side.listener.putNexts.get(), "nothing was sent while not ready");
      FlightFixture.awaitTrue(() -> side.closeFires.get() >= 1, "close listeners ran");
      assertEquals(1, side.closeFires.get(), "closed once");
    }
  }
}
