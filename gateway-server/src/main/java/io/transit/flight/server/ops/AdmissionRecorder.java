package io.transit.flight.server.ops;

import io.grpc.Context;
import io.transit.flight.diagnostic.GatewayException;

/**
 * The statement path's one way into the access log: GetFlightInfo tells it how the call's
 * admission ended ({@link #admitted}, {@link #refused}), and it writes that into the call's
 * {@link RequestRecord} (the access line's {@code admission} and {@code correlation}, and the
 * admission metrics), so the statement path knows nothing of logs or metrics.
 *
 * <p>The record is found through the call's gRPC {@link Context}, not passed in, because it
 * belongs to one call and is made by {@link RpcObserver}'s stream tracer when the call's stream
 * opens, before any interceptor or service code runs, while the services are built once at start:
 * the Context is what gRPC carries from that tracer to the thread serving the call. Its key is
 * private to this package, so this recorder, built by {@code GatewayServer} and passed to {@code
 * StatementService}, is the only way the statement path reaches a record. Outside a call that
 * {@link RpcObserver} observed (unit tests, an in-process server) there is no record, and nothing
 * is recorded.
 *
 * <p>Threads: both methods run on gRPC's service executor, inside the GetFlightInfo call's
 * Context. The recorder holds no state; the record documents its own.
 */
public final class AdmissionRecorder {
  /**
   * The admission succeeded with {@code correlation}; {@code replayed} when the journal already
   * held this statement's sequence (a retry) rather than recording it now.
   */
  public void admitted(long correlation, boolean replayed) {
    RequestRecord r = RequestRecord.current();
    if (r != null) {
      r.admitted(correlation, replayed);
    }
  }

  /** The admission was refused with {@code e}. */
  public void refused(GatewayException e) {
    RequestRecord r = RequestRecord.current();
    if (r != null) {
      r.refused(e);
    }
  }
}
