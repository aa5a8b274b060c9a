package io.transit.flight.channel;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a producer's work onto a stream's executor. Stateless (one instance serves every
 * stream); it owns nothing beyond the source-root hand-off and never touches the stream root,
 * never frees a root itself and never closes a channel directly.
 *
 * <p>The producer's loop, on its T_caller worker (or, shorter, {@code workers.execute(() ->
 * handler.produce(channel, ch -> ...sendResponseBatch...))}, which makes the terminal call):
 *
 * <pre>{@code
 * FlightServerChannel channel = registry.open(listener, mapper);   // on the gRPC thread
 * workers.execute(() -> {
 *   try {
 *     while (more) {
 *       VectorSchemaRoot batch = build(channel.allocator());
 *       handler.sendResponseBatch(channel, batch);   // batch is the channel's now, always
 *     }
 *     handler.completeStream(channel);
 *   } catch (Throwable t) {
 *     handler.sendError(channel, t);                 // a no-op if the stream already ended
 *   }
 * });
 * }</pre>
 *
 * <p>{@code sendResponseBatch} takes ownership of the batch whatever happens: handed off, it is
 * freed by {@link FlightServerChannel#sendBatch}; not handed off (gate failure, refusal), it is
 * freed here through {@link FlightServerChannel#releaseUnsent}. That includes a batch a {@link
 * BeforeHandOff} check refused. A producer therefore frees a
 * batch only if it fails before calling {@code sendResponseBatch}. Both terminal calls close the
 * channel after the terminal op; a failure inside a send fails the stream (the client gets an
 * error, never a hang) and closes it.
 *
 * <p>Exactly one terminal call per stream is the producer's duty, also after a cancel or a failed
 * send: it is what tells the registry that the producer holds no more of the stream's memory, so
 * the stream's allocator can be closed and its permit returned. Nothing may be sent after it.
 */
public final class FlightOutboundHandler {
  private static final Logger LOG = LoggerFactory.getLogger(FlightOutboundHandler.class);

  /**
   * A batch waiting on T_exec. It owns {@code source} until {@link #processBatchTask} passes it
   * to {@code sendBatch}.
   */
  record BatchTask(
      FlightServerChannel channel,
      VectorSchemaRoot source,
      CheckedSupplier<ByteBuffer> appMetadata) implements Runnable {
    @Override
    public void run() {
      processBatchTask(this);
    }
  }

  /** A producer body: builds batches in {@code channel.allocator()} and sends them. */
  @FunctionalInterface
  public interface ProducerBody {
    void produce(FlightServerChannel channel) throws Exception;
  }

  /**
   * T_caller: runs {@code body}, then makes the stream's one terminal call: {@link
   * #completeStream} when it returned, {@link #sendError} with whatever it threw. The safest way
   * to drive a stream, since the terminal call cannot be forgotten.
   */
  public void produce(FlightServerChannel channel, ProducerBody body) {
    Objects.requireNonNull(channel, "channel");
    Throwable failure = null;
    try {
      body.produce(channel);
    } catch (Throwable t) {
      failure = t;
    }
    if (failure == null) {
      completeStream(channel);
    } else {
      sendError(channel, failure);
    }
  }

  /**
   * A producer's last word on a batch, run on T_caller after the readiness gate let it through
   * and right before the hand-off (an authorization recheck, a budget charge). It must not free
   * or keep {@code batch}: when it throws, the handler frees the batch at its one unsent site.
   */
  @FunctionalInterface
  public interface BeforeHandOff {
    BeforeHandOff NONE = batch -> {};

    void check(VectorSchemaRoot batch);
  }

  /** Same as {@code sendResponseBatch(channel, source, null, BeforeHandOff.NONE)}. */
  public void sendResponseBatch(FlightServerChannel channel, VectorSchemaRoot source) {
    sendResponseBatch(channel, source, null, BeforeHandOff.NONE);
  }

  /** Same as {@code sendResponseBatch(channel, source, appMetadata, BeforeHandOff.NONE)}. */
  public void sendResponseBatch(
      FlightServerChannel channel,
      VectorSchemaRoot source,
      CheckedSupplier<ByteBuffer> appMetadata) {
    sendResponseBatch(channel, source, appMetadata, BeforeHandOff.NONE);
  }

  /**
   * T_caller: waits in the readiness gate (the one readiness wait per batch), runs {@code
   * beforeHandOff}, then hands {@code source} to the stream's executor, and returns once the
   * stream has room for the producer to build its next batch ({@link
   * FlightServerChannel#awaitRoomForNextBatch}; with one resident batch: once this one is
   * written and freed). Ownership of {@code source} passes to the channel on entry, on every
   * outcome.
   *
   * <p>The check runs after the wait on purpose: a producer parked by backpressure may have been
   * parked across a revocation, so what it decides must be decided after the park.
   *
   * @param appMetadata the batch's optional {@code app_metadata}, built on T_exec; may be null
   * @throws GatewayException when the batch was not sent (cancelled, closed, credit stall,
   *     shutting down), or the stream ended while the producer waited for room after the
   *     hand-off; the producer should stop and may call {@link #sendError}
   * @throws RuntimeException whatever {@code beforeHandOff} threw; the batch was freed
   */
  public void sendResponseBatch(
      FlightServerChannel channel,
      VectorSchemaRoot source,
      CheckedSupplier<ByteBuffer> appMetadata,
      BeforeHandOff beforeHandOff) {
    handOff(channel, source, appMetadata, beforeHandOff, true);
  }

  /**
   * T_caller: {@link #sendResponseBatch(FlightServerChannel, VectorSchemaRoot, CheckedSupplier,
   * BeforeHandOff)} for a producer's last batch: the same gate wait, check and hand-off, but it
   * returns right after the hand-off instead of waiting until the batch is written. No batch
   * follows to be bounded, and the terminal call the producer makes next queues behind this batch
   * on the same executor, so the completion goes out with the batch instead of one wake-up of
   * the producer later. Same ownership and failures.
   */
  public void sendLastResponseBatch(
      FlightServerChannel channel,
      VectorSchemaRoot source,
      CheckedSupplier<ByteBuffer> appMetadata,
      BeforeHandOff beforeHandOff) {
    handOff(channel, source, appMetadata, beforeHandOff, false);
  }

  private void handOff(
      FlightServerChannel channel,
      VectorSchemaRoot source,
      CheckedSupplier<ByteBuffer> appMetadata,
      BeforeHandOff beforeHandOff,
      boolean moreToCome) {
    if (channel == null) {
      // No channel to hand off to: the defensive early return still frees the batch.
      if (source != null) {
        source.close();
      }
      throw new NullPointerException("channel");
    }
    boolean handedOff = false;
    try {
      Objects.requireNonNull(source, "source");
      channel.awaitReadyOrThrow();
      beforeHandOff.check(source);
      channel.executor().executeBatch(new BatchTask(channel, source, appMetadata));
      handedOff = true; // sendBatch owns the source now; its finally frees it
      // Only now may the producer build the next batch: this is what bounds the batches a stream
      // holds at once (StreamLimits.residentBatches), not just the ones queued on T_exec.
      if (moreToCome) {
        channel.awaitRoomForNextBatch();
      }
    } catch (RejectedExecutionException e) {
      throw new GatewayException(
          Cause.TRANSPORT, "flight.shutting_down", "the server is shutting down", e);
    } finally {
      if (!handedOff) {
        channel.releaseUnsent(source);
      }
    }
  }

  /** T_caller: posts the terminal {@code completed()}, then the channel's close. */
  public void completeStream(FlightServerChannel channel) {
    post(channel, () -> processCompleteTask(channel));
  }

  /** T_caller (or any thread): posts the terminal {@code error(mapped)}, then the close. */
  public void sendError(FlightServerChannel channel, Throwable error) {
    post(channel, () -> processErrorTask(channel, error));
  }

  /**
   * T_exec: sends one batch; any failure (including OutOfMemoryError or AssertionError after the
   * stream root was adopted) fails the stream, which reports it and closes the channel so the
   * stream root's free is posted. Nothing escapes to kill the worker.
   */
  static void processBatchTask(BatchTask task) {
    FlightServerChannel channel = task.channel();
    try {
      channel.sendBatch(task.source(), task.appMetadata());
    } catch (Exception e) {
      channel.failStream(e);
    } catch (Throwable t) {
      LOG.error("{}: non-exception failure while sending a batch", channel.name(), t);
      channel.failStream(t);
    }
  }

  private static void processCompleteTask(FlightServerChannel channel) {
    try {
      channel.completeStream();
    } catch (Throwable t) {
      LOG.warn("{}: completing the stream failed", channel.name(), t);
    } finally {
      channel.close();
      channel.markProducerDone();
    }
  }

  private static void processErrorTask(FlightServerChannel channel, Throwable error) {
    try {
      channel.failStream(error);
    } finally {
      channel.markProducerDone();
    }
  }

  private static void post(FlightServerChannel channel, Runnable terminalTask) {
    Objects.requireNonNull(channel, "channel");
    try {
      channel.executor().execute(terminalTask);
    } catch (RuntimeException e) {
      // Terminal tasks are never refused by design; if that ever breaks, still release.
      LOG.error("{}: could not post a terminal task", channel.name(), e);
      channel.close();
      channel.markProducerDone();
    }
  }
}
