package io.transit.flight.server.ops;

import io.grpc.Context;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * What one RPC did, collected for its access-log line and metrics: created by {@link RpcObserver}
 * when the call's stream opens and carried in the call's gRPC {@link Context} ({@link #KEY}, this
 * package's own), so the statement path can add its admission outcome and correlation ({@link
 * #admitted}, {@link #refused}) through the {@link AdmissionRecorder} it is given, without knowing
 * about logs or metrics. {@link AdmissionRecorder} says why a Context key and not injection.
 *
 * <p>Threads: the transport thread adds wire bytes, the service executor sets caller and
 * admission facts, the stream's closing thread reads everything once ({@link #close}). Every
 * field is volatile or atomic; each is written by one party. The admission and the close meet
 * under this object's monitor: a call cancelled, or past its deadline, while its statement is
 * admitted closes first, and the admission that comes after is handed to {@code late} (counted
 * in the metrics; the access line is written by then).
 */
final class RequestRecord {
  static final Context.Key<RequestRecord> KEY = Context.key("transit.request");

  final String id;
  final String method; // full gRPC method name
  final long startNanos;
  final AtomicLong bytesOut = new AtomicLong();
  final AtomicLong bytesIn = new AtomicLong();
  final AtomicLong messagesOut = new AtomicLong();
  volatile String peer;
  volatile String caller;
  volatile String diagnostic; // the code of a refusal, e.g. query.sequence_gap
  // accepted | replayed | conflict | gap | pruned | busy | failed; @GuardedBy("this")
  private String admission;
  private boolean closed; // @GuardedBy("this"): the closing thread has read the record
  volatile String correlation; // unsigned decimal
  private final Consumer<String> late;

  /** {@code late} receives an admission outcome set after the call closed. */
  RequestRecord(String method, long startNanos, Consumer<String> late) {
    this.id = Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
    this.method = method;
    this.startNanos = startNanos;
    this.late = late;
  }

  /** The closing thread: the admission outcome so far (null: none); later ones go to late. */
  synchronized String close() {
    closed = true;
    return admission;
  }

  private void admission(String outcome) {
    boolean after;
    synchronized (this) {
      admission = outcome;
      after = closed;
    }
    if (after) {
      late.accept(outcome);
    }
  }

  /** The record of the call running on this thread's gRPC context, or null outside a call. */
  static RequestRecord current() {
    return KEY.get();
  }

  /**
   * Statement path: the admission succeeded with {@code correlation}; {@code replayed} when the
   * journal already held this statement's sequence (a retry) rather than recording it now.
   */
  void admitted(long correlation, boolean replayed) {
    this.correlation = Long.toUnsignedString(correlation);
    admission(replayed ? "replayed" : "accepted");
  }

  /** Statement path: the admission was refused with {@code e}. */
  void refused(GatewayException e) {
    // By type: the engine's conflict, gap and forgotten history; ADMISSION_BUSY is, from
    // admission, the limiter's.
    if (e.queryCode() == QueryCode.NAMESPACE_CONFLICT) {
      admission("conflict");
    } else if (e.queryCode() == QueryCode.SEQUENCE_GAP) {
      admission("gap");
    } else if (e.queryCode() == QueryCode.HISTORY_PRUNED) {
      admission("pruned");
    } else if (e.kind() == Cause.ADMISSION_BUSY) {
      admission("busy");
    } else {
      admission("failed");
    }
  }
}
