package io.transit.flight.server.transport;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.transit.flight.channel.FlightServerChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * When each DoGet call is over as gRPC sees it, and the reset of one that will not be. A stream's
 * last batch leaves its Arrow memory at the hand-off, but gRPC keeps the serialized copy (up to
 * {@code max_segment_bytes}) in direct memory until the client has read it, and the status after
 * it; a client that stops reading holds that copy for as long as its connection lives. So the
 * stream's permit and caller share are held until the call is over ({@link
 * io.transit.flight.channel.StreamRegistry}), and a call still not over {@code credit_stall_ms}
 * after its stream closed is reset (RST_STREAM CANCEL: the client sees CANCELLED), which drops
 * what gRPC held for it. Until 2026-12-06 neither: one caller held 52 unread streams at once,
 * and the daemon's direct memory ran out for everyone.
 *
 * <p>A call is over when its stream ends at the transport ({@link StreamBound#STREAM_END}, on
 * the connection's event loop), or when gRPC reports it completed or cancelled on its executor,
 * whichever comes first: that report can lag the stream's end behind a busy executor. The reset
 * is the call's connection's ({@link StreamBound#RESET}), and runs only while the call's stream is
 * still open, checked on that connection's loop. A call on a transport without both
 * (in-process) is not held: it counts as over at once.
 *
 * <p>Threads: {@link #interceptCall} runs on the thread gRPC starts the call on; the call's end
 * is completed on the connection's event loop or on gRPC's executor ({@code onComplete}, {@code
 * onCancel}); {@link #current} and {@link #bound} on the DoGet thread; the reset is scheduled on
 * the timer's thread and decided on the event loop. {@link #resets} from any.
 */
public final class CallEnds implements ServerInterceptor {
  private static final Context.Key<Call> CALL = Context.key("transit.call-end");
  private static final String DO_GET = "arrow.flight.protocol.FlightService/DoGet";

  private final AtomicLong resets = new AtomicLong();

  /** One DoGet call's end, and its reset. */
  public final class Call {
    private final CompletableFuture<Void> ended = new CompletableFuture<>(); // any thread
    private final StreamBound.Reset reset; // null only for the call that is over already; final

    private Call(StreamBound.Reset reset) {
      this.reset = reset;
    }

    /**
     * Completes (never fails) once the call's stream ends at the transport, or gRPC reports the
     * call completed or cancelled, whichever comes first.
     */
    public CompletionStage<Void> ended() {
      return ended;
    }

    /** Timer thread: asks the call's event loop to reset the call's stream if still open. */
    private void reset(long budgetMs) {
      if (ended.isDone()) {
        return;
      }
      reset.resetStreams("the client did not read the stream's end within " + budgetMs + " ms",
          () -> { // on the event loop, which completes the stream's end: exact there
            if (ended.isDone()) {
              return false;
            }
            resets.incrementAndGet();
            return true;
          });
    }
  }

  /** A call that is already over: for a DoGet outside this interceptor (tests, in-process). */
  private final Call over = new Call(null);

  public CallEnds() {
    over.ended.complete(null);
  }

  /** Calls reset because their client did not read their end in time, since start. */
  public long resets() {
    return resets.get();
  }

  /** The current DoGet call's end; one already over outside a call this interceptor saw. */
  public Call current() {
    Call call = CALL.get();
    return call != null ? call : over;
  }

  /**
   * Resets {@code call} unless it is over within {@code budgetMs} of {@code channel}'s close (the
   * producer's terminal call: its last batch or its error handed to gRPC).
   */
  public void bound(FlightServerChannel channel, Call call, ScheduledExecutorService timer,
      long budgetMs) {
    if (call == over) {
      return;
    }
    channel.addCloseListener(() -> {
      if (call.ended.isDone()) {
        return;
      }
      ScheduledFuture<?> reset;
      try {
        reset = timer.schedule(() -> call.reset(budgetMs), budgetMs, TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException e) {
        return; // stopping: the server's own shutdown cancels every call
      }
      call.ended.whenComplete((ignored, failure) -> reset.cancel(false));
    });
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> serverCall, Metadata headers, ServerCallHandler<Q, R> next) {
    if (!DO_GET.equals(serverCall.getMethodDescriptor().getFullMethodName())) {
      return next.startCall(serverCall, headers);
    }
    StreamBound.Reset reset = serverCall.getAttributes().get(StreamBound.RESET);
    CompletableFuture<Void> streamEnd = StreamBound.STREAM_END.get();
    if (reset == null || streamEnd == null) {
      return next.startCall(serverCall, headers);
    }
    Call call = new Call(reset);
    streamEnd.whenComplete((ignored, failure) -> call.ended.complete(null));
    ServerCall.Listener<Q> inner = Contexts.interceptCall(
        Context.current().withValue(CALL, call), serverCall, headers, next);
    return new SimpleForwardingServerCallListener<>(inner) {
      @Override
      public void onComplete() {
        try {
          super.onComplete();
        } finally {
          call.ended.complete(null);
        }
      }

      @Override
      public void onCancel() {
        try {
          super.onCancel();
        } finally {
          call.ended.complete(null);
        }
      }
    };
  }
}
