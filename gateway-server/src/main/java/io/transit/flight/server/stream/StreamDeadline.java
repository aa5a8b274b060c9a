package io.transit.flight.server.stream;

import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.server.request.Deadlines;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The data deadline of one DoGet stream. gRPC enforces a client deadline by itself, but a client
 * may set none (or one above {@code data_deadline_max_ms}); then this timer ends the stream with
 * DEADLINE_EXCEEDED {@code flight.deadline_exceeded} through the channel's own abort path, so the
 * error is serialized behind any in-flight send on the stream's executor and every buffer is
 * freed by the channel as on any failure.
 *
 * <p>Threads: {@link #bound} runs on the gRPC call thread (where the call's deadline is in the
 * current context); the expiry runs on the shared timer thread and only posts to the channel's
 * executor; the channel's close listener cancels the timer on whatever thread closes it.
 */
public final class StreamDeadline {
  private StreamDeadline() {}

  public static void bound(FlightServerChannel channel, Deadlines deadlines, ScheduledExecutorService timer) {
    long budgetNanos = deadlines.dataBudgetNanos();
    long budgetMs = TimeUnit.NANOSECONDS.toMillis(budgetNanos);
    ScheduledFuture<?> expiry;
    try {
      expiry = timer.schedule(() -> expire(channel, budgetMs), budgetNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // The daemon is stopping: the stream is cut by the shutdown drain instead.
      return;
    }
    channel.addCloseListener(() -> expiry.cancel(false));
  }

  private static void expire(FlightServerChannel channel, long budgetMs) {
    if (!channel.isOpen()) {
      return;
    }
    try {
      channel.abort(GatewayException.of(Cause.DEADLINE, "flight.deadline_exceeded",
              "the stream did not finish within its data deadline")
          .with("deadline_ms", budgetMs));
    } catch (RejectedExecutionException e) {
      // The stream's executor is already draining for shutdown; that path ends the stream.
    }
  }
}
