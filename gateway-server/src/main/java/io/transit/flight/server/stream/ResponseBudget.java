package io.transit.flight.server.stream;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * The {@code max_response_bytes_per_stream} budget of one DoGet stream: the Arrow buffer bytes
 * (the IPC message bodies) of every batch sent so far. Checked before a batch is handed to the
 * channel, so a stream that would exceed it fails with RESOURCE_EXHAUSTED {@code
 * flight.response_budget} carrying the exact {@code limit} and {@code required} bytes; the client
 * then sees an error after the batches already sent, never a completed short result.
 *
 * <p>One instance per stream, used only by that stream's producer (T_caller).
 */
public final class ResponseBudget {
  private final long limit;
  private long sent;

  public ResponseBudget(long limit) {
    this.limit = limit;
  }

  /**
   * Counts {@code batch} against the budget, or throws when it would exceed it. Never frees the
   * batch: the caller keeps ownership either way (the {@link BatchSender}'s hand-off frees a
   * refused one at the channel's unsent site).
   */
  public void charge(VectorSchemaRoot batch) {
    long bytes = bytesOf(batch);
    if (sent + bytes > limit) {
      long required = sent + bytes;
      throw GatewayException.of(Cause.BUDGET_EXHAUSTED, "flight.response_budget",
              "the result stream exceeds the response byte budget")
          .with("limit", limit)
          .with("required", required)
          // The query succeeded; this read of it ended early (the cause's actions stand: the
          // same ticket would stop at the same byte).
          .withOutcome(Outcome.INCOMPLETE);
    }
    sent += bytes;
  }

  static long bytesOf(VectorSchemaRoot batch) {
    long n = 0;
    for (FieldVector v : batch.getFieldVectors()) {
      n += v.getBufferSize();
    }
    return n;
  }
}
