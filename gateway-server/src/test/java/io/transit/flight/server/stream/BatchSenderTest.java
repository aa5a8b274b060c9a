package io.transit.flight.server.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The one hand-off every DoGet batch takes, over a real Flight server and client on loopback, a
 * real stream registry and real allocators: accepted batches arrive in order; a batch refused by
 * the budget or by the authorization recheck is never disclosed, the stream ends with the
 * refusal's status after the batches already sent, and no byte is left allocated.
 */
class BatchSenderTest {
  private static final int ROWS = 100;
  private LoopbackStreams loopback;

  @BeforeEach
  void start() throws Exception {
    loopback = new LoopbackStreams();
  }

  @AfterEach
  void stop() throws Exception {
    loopback.close();
  }

  /** Rows {@code index * ROWS ..} of a one-column BIGINT batch, built in {@code allocator}. */
  private static VectorSchemaRoot batch(BufferAllocator allocator, int index) {
    BigIntVector v = new BigIntVector("v", allocator);
    v.allocateNew(ROWS);
    for (int i = 0; i < ROWS; i++) {
      v.set(i, (long) index * ROWS + i);
    }
    v.setValueCount(ROWS);
    return VectorSchemaRoot.of(v);
  }

  private static long bytesOfOneBatch() {
    try (BufferAllocator a = new RootAllocator(); VectorSchemaRoot b = batch(a, 0)) {
      return ResponseBudget.bytesOf(b);
    }
  }

  /** Sends three batches through one sender with this budget and recheck. */
  private LoopbackStreams.Seen sendThree(long budgetBytes, BatchSender.Recheck recheck)
      throws Exception {
    return loopback.read((FlightServerChannel channel) -> {
      BatchSender sender = new BatchSender(loopback.handler, channel,
          new ResponseBudget(budgetBytes), recheck);
      for (int i = 0; i < 3; i++) {
        sender.send(batch(channel.allocator(), i));
      }
    });
  }

  @Test
  void acceptedBatchesArriveInOrderAndTheStreamCompletes() throws Exception {
    LoopbackStreams.Seen seen = sendThree(3 * bytesOfOneBatch(), () -> {});
    assertNull(seen.error());
    assertEquals(List.of(0L, (long) ROWS, 2L * ROWS), seen.firsts());
  }

  @Test
  void batchRefusedByTheBudgetIsNeverSentAndTheStreamFails() throws Exception {
    LoopbackStreams.Seen seen = sendThree(bytesOfOneBatch(), () -> {}); // one batch fits
    assertEquals(List.of(0L), seen.firsts(), "only the batch within the budget is disclosed");
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, seen.error().status().code());
  }

  @Test
  void batchRefusedByTheRecheckAtHandOffIsNeverSentAndTheStreamFails() throws Exception {
    AtomicInteger checks = new AtomicInteger();
    LoopbackStreams.Seen seen = sendThree(3 * bytesOfOneBatch(), () -> {
      if (checks.incrementAndGet() == 2) {
        throw GatewayException.of(Cause.ACCESS_DENIED, "access.read_revoked",
            "the caller's read right was revoked");
      }
    });
    assertEquals(List.of(0L), seen.firsts(), "the batch held across the revocation is hidden");
    assertNotNull(seen.error());
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code());
    assertEquals(2, checks.get(), "the producer stopped at the refusal");
  }

  /**
   * A revoked caller whose held batch would also pass the budget is told of the revocation, not
   * of the budget: the budget's refusal would give the withheld batch's size away.
   */
  @Test
  void aRevocationIsAnsweredBeforeTheBudgetAtTheSameBatch() throws Exception {
    AtomicInteger checks = new AtomicInteger();
    LoopbackStreams.Seen seen = sendThree(bytesOfOneBatch(), () -> {
      if (checks.incrementAndGet() == 2) {
        throw GatewayException.of(Cause.ACCESS_DENIED, "access.read_revoked",
            "the caller's read right was revoked");
      }
    });
    assertEquals(List.of(0L), seen.firsts());
    assertEquals(FlightStatusCode.UNAUTHORIZED, seen.error().status().code(),
        seen.error().toString());
  }
}
