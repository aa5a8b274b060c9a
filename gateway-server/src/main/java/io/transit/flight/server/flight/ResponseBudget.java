package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
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
final class ResponseBudget {
  private final long limit;
  private long sent;

  ResponseBudget(long limit) {
    this.limit = limit;
  }

  /**
   * Counts {@code batch} against the budget. On refusal the batch is freed here (it never reaches
   * the channel) and the failure is thrown.
   */
  void charge(VectorSchemaRoot batch) {
    long bytes = bytesOf(batch);
    if (sent + bytes > limit) {
      long required = sent + bytes;
      batch.close();
      throw GatewayException.of(Cause.BUDGET_EXHAUSTED, "flight.response_budget",
              "the result stream exceeds the response byte budget")
          .with("limit", Long.toString(limit))
          .with("required", Long.toString(required));
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
