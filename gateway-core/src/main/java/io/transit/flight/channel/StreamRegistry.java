package io.transit.flight.channel;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.memory.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens DoGet streams and releases them exactly once. Each stream takes a concurrency permit,
 * gets a child allocator of the gateway's root allocator with a per-stream limit and its own
 * {@link StreamExecutor}, and is wired to gRPC's cancel and on-ready callbacks. When the channel
 * closes, its close listener waits (without blocking: it chains on {@link
 * FlightServerChannel#rootFreed()} and {@link FlightServerChannel#producerDone()}) for the posted
 * stream-root free and for the producer's terminal task, then checks the child allocator is
 * empty, closes it and returns the permit. Waiting for the producer matters: after a cancel the
 * producer may still hold a batch built in the stream's allocator. A non-empty allocator is a
 * leak: logged at ERROR and counted in {@link #leakedStreams()}. A stream opened with its call's
 * end ({@link #open(ServerStreamListener, Function, Runnable, CompletionStage)}) is released only
 * once that call is over as well: the last batch's hand-off frees its Arrow memory, but gRPC
 * keeps the serialized copy until the client has taken it, so a client that stops reading would
 * otherwise hold that copy while its permit already served another stream.
 *
 * <p>Threads: {@link #open} runs on the gRPC thread that entered DoGet; the release runs on the
 * stream's executor (or the closing thread when the free already ran, or the transport thread
 * that reported the call over when that came last: gRPC's executor or the connection's event
 * loop); {@link #shutdown} on the thread stopping the server. Counters are safe from any thread.
 */
public final class StreamRegistry implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StreamRegistry.class);

  private final BufferAllocator rootAllocator;
  private final StreamExecutorPool pool;
  private final StreamLimits limits;
  private final Semaphore permits;
  // Each live stream and what completes when it is released.
  private final Map<FlightServerChannel, CompletableFuture<Void>> live = new ConcurrentHashMap<>();
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicLong released = new AtomicLong();
  private final AtomicLong leaked = new AtomicLong();
  private final AtomicLong streamPeak = new AtomicLong(); // max over released streams; any thread
  private volatile boolean shuttingDown;

  /** A registry whose streams allocate under {@code rootAllocator} and run on {@code pool}. */
  public StreamRegistry(
      BufferAllocator rootAllocator, StreamExecutorPool pool, StreamLimits limits) {
    this.rootAllocator = Objects.requireNonNull(rootAllocator, "rootAllocator");
    this.pool = Objects.requireNonNull(pool, "pool");
    this.limits = Objects.requireNonNull(limits, "limits");
    this.permits = new Semaphore(limits.maxLiveStreams());
  }

  /**
   * gRPC thread (DoGet entry): opens a stream on {@code listener}. Its producer must end with
   * exactly one {@link FlightOutboundHandler#completeStream} or {@link
   * FlightOutboundHandler#sendError}, also after a cancel or a failed send (both are then
   * harmless no-ops on the wire): that call releases the stream's permit and allocator. Nothing
   * is held when this throws; the caller then reports the failure with {@code
   * listener.error(mapper.apply(e))}.
   *
   * @param errorMapper turns any failure of this stream into what {@code listener.error} gets:
   *     normally {@code ErrorMapper::toGrpc}, whose {@code io.grpc.StatusRuntimeException} Arrow
   *     passes to the client unchanged, so every gRPC code (ABORTED, FAILED_PRECONDITION,
   *     OUT_OF_RANGE, DATA_LOSS included, which Arrow's {@code FlightStatusCode} lacks) and the
   *     diagnostic trailer arrive exactly; a {@code FlightRuntimeException} works too. Called on
   *     T_exec; must not block. A mapper that throws or returns null yields INTERNAL.
   * @throws GatewayException {@code flight.streams_exhausted} (no permit left) or {@code
   *     flight.shutting_down}
   */
  public FlightServerChannel open(
      ServerStreamListener listener,
      Function<? super Throwable, ? extends RuntimeException> errorMapper) {
    return open(listener, errorMapper, () -> {});
  }

  /**
   * As {@link #open(ServerStreamListener, Function)}; {@code released} runs once when the stream
   * is released — its permit returned and its allocator closed, which a close alone does not do
   * while its producer still runs — on the thread that completes the release (T_exec or the
   * producer's). It must not block. It does not run when this throws.
   */
  public FlightServerChannel open(
      ServerStreamListener listener,
      Function<? super Throwable, ? extends RuntimeException> errorMapper,
      Runnable released) {
    return open(listener, errorMapper, released, CompletableFuture.completedFuture(null));
  }

  /**
   * As {@link #open(ServerStreamListener, Function, Runnable)}, and the stream is released only
   * once {@code callEnded} has completed too (normally or not): the transport reported the call
   * over, its status written after every message or the call cancelled. Whoever supplies it must
   * see that it completes — a call the client never finishes reading is reset for that.
   */
  public FlightServerChannel open(
      ServerStreamListener listener,
      Function<? super Throwable, ? extends RuntimeException> errorMapper,
      Runnable released,
      CompletionStage<?> callEnded) {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(callEnded, "callEnded");
    Objects.requireNonNull(errorMapper, "errorMapper");
    Objects.requireNonNull(released, "released");
    if (shuttingDown) {
      throw shuttingDownFailure();
    }
    if (!permits.tryAcquire()) {
      // Nothing was read, and the same ticket can be read once a stream ends.
      throw new GatewayException(
              Cause.BUDGET_EXHAUSTED, "flight.streams_exhausted", "too many live result streams")
          .with("max_live_streams", limits.maxLiveStreams())
          .withOutcome(Outcome.NOT_ADMITTED)
          .withActions(Action.RETRY_LATER);
    }
    String name = "stream-" + sequence.incrementAndGet();
    BufferAllocator child = null;
    boolean opened = false;
    try {
      child = rootAllocator.newChildAllocator(name, 0, limits.perStreamAllocatorLimit());
      StreamExecutor executor = pool.newStreamExecutor(name);
      FlightServerChannel channel =
          new FlightServerChannel(name, listener, executor, child, errorMapper, limits);
      Lease lease = new Lease(channel, child, released, callEnded.toCompletableFuture());
      listener.setOnCancelHandler(channel::onChannelCancelled);
      listener.setOnReadyHandler(channel::onReady);
      live.put(channel, lease.released);
      channel.addCloseListener(lease::onChannelClosed);
      opened = true;
      if (listener.isCancelled()) {
        // The cancel arrived before the handler was set and would otherwise be lost.
        channel.onChannelCancelled();
      }
      if (shuttingDown) {
        // Raced with shutdown(), which may have aborted the live set before this was added.
        channel.abort(shuttingDownFailure());
      }
      return channel;
    } catch (RejectedExecutionException e) {
      throw new GatewayException(
          Cause.TRANSPORT, "flight.shutting_down", "the server is shutting down", e);
    } finally {
      if (!opened) {
        if (child != null) {
          child.close();
        }
        permits.release();
      }
    }
  }

  /** Streams opened and not yet released. */
  public int liveStreams() {
    return live.size();
  }

  /** Streams released (permit returned, allocator closed). */
  public long releasedStreams() {
    return released.get();
  }

  /** Streams whose child allocator still held memory after the stream root was freed. */
  public long leakedStreams() {
    return leaked.get();
  }

  /**
   * The largest peak of any released stream's child allocator, in the allocator's accounting
   * (Arrow rounds a request below its 16 MiB chunk up to a power of two): the most one stream
   * ever held at once. Operators compare it with {@code stream_allocator_bytes}; tests assert the
   * per-stream bound with it.
   */
  public long streamPeakBytes() {
    return streamPeak.get();
  }

  /** Permits not in use. */
  public int availablePermits() {
    return permits.availablePermits();
  }

  /**
   * Stops the streaming core: refuses new streams, fails every live stream with {@code
   * flight.shutting_down} (posted behind its queued sends), then drains and stops the executor
   * pool, so every posted root free runs, then waits for every stream's release (its call's end
   * included), all within {@code timeout}. Idempotent.
   *
   * @return {@code true} when the pool drained, every stream was released and none leaked
   */
  public boolean shutdown(Duration timeout) {
    shuttingDown = true;
    GatewayException reason = shuttingDownFailure();
    long deadline = System.nanoTime() + timeout.toNanos();
    for (FlightServerChannel channel : live.keySet()) {
      channel.abort(reason);
    }
    boolean drained = pool.shutdownGracefully(timeout);
    boolean allReleased = awaitReleases(deadline);
    if (!allReleased) {
      LOG.error("{} stream(s) not released at shutdown: {}", live.size(), live.keySet());
    }
    return drained && allReleased && leaked.get() == 0;
  }

  /**
   * Waits, until {@code deadline} at most, for the streams still live to be released. The pool's
   * drain is not enough: a stream is released once its call is over too, and gRPC reports that
   * on its own executor, possibly just after the listener stopped (the server's termination does
   * not wait for it). Until 2026-12-07 this checked at once, and a stream whose call's end was
   * still queued there failed the stop.
   */
  private boolean awaitReleases(long deadline) {
    CompletableFuture<?>[] pending = live.values().toArray(CompletableFuture[]::new);
    try {
      CompletableFuture.allOf(pending)
          .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // reported by the caller with what is still live
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return live.isEmpty();
  }

  /** Same as {@code shutdown(10s)}. */
  @Override
  public void close() {
    shutdown(Duration.ofSeconds(10));
  }

  private static GatewayException shuttingDownFailure() {
    return new GatewayException(
        Cause.TRANSPORT, "flight.shutting_down", "the server is shutting down");
  }

  /**
   * One stream's permit and allocator; released once, after the stream root is freed, the
   * producer is done and the call is over.
   */
  private final class Lease {
    private final FlightServerChannel channel;
    private final BufferAllocator child;
    private final Runnable onReleased;
    private final CompletableFuture<?> callEnded;
    private final CompletableFuture<Void> released = new CompletableFuture<>(); // after release
    private final AtomicBoolean done = new AtomicBoolean();

    Lease(FlightServerChannel channel, BufferAllocator child, Runnable onReleased,
        CompletableFuture<?> callEnded) {
      this.channel = channel;
      this.child = child;
      this.onReleased = onReleased;
      this.callEnded = callEnded;
    }

    /**
     * Close listener: runs on the closing thread, so it only chains and never blocks. The
     * allocator may close only when the stream root is freed and the producer is done with it;
     * the permit returns only when the call is over too (the release then runs on the thread
     * that completed the last of the three).
     */
    void onChannelClosed() {
      CompletableFuture.allOf(channel.rootFreed(), channel.producerDone(), callEnded)
          .whenComplete((ignored, failure) -> release());
    }

    private void release() {
      if (!done.compareAndSet(false, true)) {
        return;
      }
      try {
        streamPeak.accumulateAndGet(child.getPeakMemoryAllocation(), Math::max);
        long outstanding = child.getAllocatedMemory();
        if (outstanding != 0) {
          leaked.incrementAndGet();
          LOG.error(
              "LEAK: {} still holds {} byte(s) after its stream root was freed\n{}",
              channel.name(),
              outstanding,
              child.toVerboseString());
        }
        child.close();
      } catch (RuntimeException e) {
        LOG.error("{}: closing the stream allocator failed", channel.name(), e);
      } finally {
        live.remove(channel);
        StreamRegistry.this.released.incrementAndGet();
        permits.release();
        try {
          onReleased.run();
        } catch (RuntimeException e) {
          LOG.error("{}: a release callback failed", channel.name(), e);
        }
        released.complete(null);
      }
    }
  }
}
