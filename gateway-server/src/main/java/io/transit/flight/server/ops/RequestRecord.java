package io.transit.flight.server.ops;

import io.grpc.Context;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one RPC did, collected for its access-log line and metrics: created by {@link RpcObserver}
 * when the call's stream opens and carried in the call's gRPC {@link Context}, so the statement
 * path can add its admission outcome and correlation ({@link #admitted}, {@link #refused}) without
 * knowing about logs or metrics.
 *
 * <p>Threads: the transport thread adds wire bytes, the service executor sets caller and
 * admission facts, the stream's closing thread reads everything once. Every field is volatile or
 * atomic; each is written by one party.
 */
public final class RequestRecord {
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
  volatile String admission; // accepted | replayed | conflict | gap | pruned | busy | failed
  volatile String correlation; // unsigned decimal

  RequestRecord(String method, long startNanos) {
    this.id = Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
    this.method = method;
    this.startNanos = startNanos;
  }

  /** The record of the call running on this thread's gRPC context, or null outside a call. */
  static RequestRecord current() {
    return KEY.get();
  }

  /**
   * Statement path: the admission succeeded with {@code correlation}; {@code replayed} when the
   * journal already held this statement's sequence (a retry) rather than recording it now.
   */
  public static void admitted(long correlation, boolean replayed) {
    RequestRecord r = current();
    if (r != null) {
      r.correlation = Long.toUnsignedString(correlation);
      r.admission = replayed ? "replayed" : "accepted";
    }
  }

  /** Statement path: the admission was refused with {@code e}. */
  public static void refused(GatewayException e) {
    RequestRecord r = current();
    if (r != null) {
      // By type: the engine's conflict, gap and forgotten history; ADMISSION_BUSY is, from
      // admission, the limiter's.
      if (e.queryCode() == QueryCode.NAMESPACE_CONFLICT) {
        r.admission = "conflict";
      } else if (e.queryCode() == QueryCode.SEQUENCE_GAP) {
        r.admission = "gap";
      } else if (e.queryCode() == QueryCode.HISTORY_PRUNED) {
        r.admission = "pruned";
      } else if (e.kind() == Cause.ADMISSION_BUSY) {
        r.admission = "busy";
      } else {
        r.admission = "failed";
      }
    }
  }
}
