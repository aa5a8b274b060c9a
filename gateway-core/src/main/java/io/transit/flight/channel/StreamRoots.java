package io.transit.flight.channel;

import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Creation and refilling of a stream's reused root, by buffer transfer (no copy). Called only by
 * {@link FlightServerChannel#sendBatch} on T_exec.
 *
 * <p>Ownership: after {@link #adopt} or {@link #refill} the source root's vectors are empty (their
 * buffers now belong to the stream root) and the caller still frees the source root; the stream
 * root returned by {@code adopt} belongs to the channel. If {@code adopt} fails, the root it
 * created is freed here, so an un-adopted root never leaks.
 */
final class StreamRoots {
  private StreamRoots() {}

  /** First batch: a stream root in the source's allocator; freed here if adoption fails. */
  static VectorSchemaRoot adopt(VectorSchemaRoot source) {
    List<FieldVector> vectors = source.getFieldVectors();
    if (vectors.isEmpty()) {
      throw new IllegalArgumentException("a batch needs at least one column (got: 0)");
    }
    VectorSchemaRoot created =
        VectorSchemaRoot.create(source.getSchema(), vectors.get(0).getAllocator());
    try {
      refill(source, created);
      VectorSchemaRoot adopted = created;
      created = null;
      return adopted;
    } finally {
      if (created != null) {
        created.close();
      }
    }
  }

  /**
   * Moves {@code source}'s buffers into {@code target}; the transfer releases {@code target}'s
   * previous buffers, which gRPC no longer references (the channel writes by copy).
   *
   * @throws IllegalArgumentException when the schemas differ (nothing has moved then)
   */
  static void refill(VectorSchemaRoot source, VectorSchemaRoot target) {
    if (!source.getSchema().equals(target.getSchema())) {
      throw new IllegalArgumentException(
          "batch schema " + source.getSchema() + " differs from the stream's (expected: "
              + target.getSchema() + ")");
    }
    for (int i = 0; i < source.getFieldVectors().size(); i++) {
      source.getVector(i).makeTransferPair(target.getVector(i)).transfer();
    }
    target.setRowCount(source.getRowCount());
    source.setRowCount(0);
  }
}
