package io.transit.flight.channel;

import static io.transit.flight.channel.FlightFixture.WAIT;
import static io.transit.flight.channel.FlightFixture.await;
import static io.transit.flight.channel.FlightFixture.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/** Root-cause classes 9, 10 and 12: close-listener registration, isolation, early returns. */
class CloseListenerTest {

  @Test
  void throwingCloseListenerDoesNotStrandTheOthers() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      AtomicInteger after = new AtomicInteger();
      fx.script = side -> {
        side.channel.addCloseListener(() -> {
          throw new IllegalStateException("listener bug");
        });
        side.channel.addCloseListener(() -> {
          throw new AssertionError("listener assertion");
        });
        side.channel.addCloseListener(after::incrementAndGet);
        fx.handler.sendResponseBatch(side.channel, batch(side.channel.allocator(), 3));
        fx.handler.completeStream(side.channel);
      };
      FlightFixture.ClientResult result = fx.read(-1);
      FlightFixture.ServerSide side = fx.nextOpened();
      fx.awaitQuiet();
      assertEquals(3, result.rows());
      assertEquals(1, after.get(), "the listener after two throwing ones still ran");
      assertEquals(1, side.closeFires.get());
      assertEquals(1, fx.registry.releasedStreams(), "the registry's release was not stranded");
    }
  }

  @Test
  void closeListenerRegistrationRacingCloseFiresExactlyOnce() throws Exception {
    try (FlightFixture fx = new FlightFixture()) {
      for (int i = 0; i < 100; i++) {
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch raced = new CountDownLatch(3);
        AtomicInteger first = new AtomicInteger();
        AtomicInteger second = new AtomicInteger();
        fx.script = side -> {
          await(raced);
          fx.handler.completeStream(side.channel); // the producer's terminal call
        };
        FlightStream stream = fx.stream();
        FlightFixture.ServerSide side = fx.nextOpened();
        Runnable closer = () -> { await(go); side.channel.close(); raced.countDown(); };
        Runnable adder1 = () -> { await(go); side.channel.addCloseListener(first::incrementAndGet); raced.countDown(); };
        Runnable adder2 = () -> { await(go); side.channel.addCloseListener(second::incrementAndGet); raced.countDown(); };
        Thread[] threads = {new Thread(closer), new Thread(adder1), new Thread(adder2)};
        for (Thread t : threads) {
          t.start();
        }
        go.countDown();
        for (Thread t : threads) {
          t.join(WAIT.toMillis());
        }
        FlightFixture.read(stream, -1);
        fx.awaitQuiet();
        assertEquals(1, first.get(), "iteration " + i);
        assertEquals(1, second.get(), "iteration " + i);
        assertEquals(1, side.closeFires.get(), "iteration " + i);
      }
    }
  }

  @Test
  void nullChannelStillFreesTheBatch() {
    try (BufferAllocator allocator = new RootAllocator()) {
      FlightOutboundHandler handler = new FlightOutboundHandler();
      assertThrows(NullPointerException.class,
          () -> handler.sendResponseBatch(null, batch(allocator, 16)));
      assertEquals(0, allocator.getAllocatedMemory(), "the defensive early return freed it");
    }
  }
}
