package io.transit.flight.channel;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One DoGet stream: the only owner of its Arrow buffers and of the gRPC call's life, built to
 * the channel contract (single-writer confinement, CAS-once {@code close()}).
 *
 * <p><b>Threads.</b> T_caller (the producer) calls {@link #awaitReadyOrThrow()}, {@link
 * #awaitRoomForNextBatch()} and {@link #releaseUnsent(VectorSchemaRoot)}; T_exec (this stream's
 * {@link StreamExecutor}) runs {@link #sendBatch}, {@link #completeStream()}, {@link
 * #sendError(Throwable)}, {@link #failStream(Throwable)} and the root free; T_grpc calls {@link
 * #onChannelCancelled()} and {@link #onReady()}. {@link #close()}, {@link #abort(Throwable)} and
 * {@link #addCloseListener(Runnable)} are safe from any thread. The stream root and every {@link
 * ServerStreamListener} call that acts on the call (start, putNext, completed, error) are confined
 * to T_exec; each such entry point calls {@link StreamExecutor#checkOnExecutor()}. The gate reads
 * {@code isReady()} on T_caller; the registry registers the handlers on T_grpc before any task.
 *
 * <p><b>Buffers.</b> A source root passed to {@code sendBatch} is owned by that call and freed in
 * its {@code finally}; a source root that never reached {@code sendBatch} is freed by {@code
 * releaseUnsent}. The stream root is created on the first batch from the source root's allocator,
 * refilled by transfer for every batch and emptied as soon as that batch is written (writes copy,
 * so gRPC keeps no reference into it); the root itself is freed only by the task {@code close()}
 * posts. So the stream's allocator holds at most {@code residentBatches} decoded batches: the
 * producer's and those waiting on T_exec, none in the root between writes. A
 * metadata buffer goes to gRPC through {@code putNext(buf)}, or is freed here if {@code putNext}
 * throws before taking it. There is no byte-serialized path, so no per-batch vector to free.
 */
public final class FlightServerChannel {
  private static final Logger LOG = LoggerFactory.getLogger(FlightServerChannel.class);

  private final String name;
  private final ServerStreamListener listener;
  private final StreamExecutor executor;
  private final BufferAllocator allocator;
  /** Turns a failure into what {@code listener.error} gets; see {@link StreamRegistry#open}. */
  private final Function<? super Throwable, ? extends RuntimeException> errorMapper;
  private final int residentBatches;

  private final AtomicBoolean open = new AtomicBoolean(true); // flips true→false once, by CAS
  private volatile boolean cancelled; // set once, by T_grpc
  private volatile VectorSchemaRoot root; // T_exec-confined; volatile only for streamRoot()
  private boolean terminalSent; // T_exec-confined
  private boolean batchWritten; // T_exec-confined: a batch reached the wire's buffers
  private final CompletableFuture<Void> rootFreed = new CompletableFuture<>();
  private final CompletableFuture<Void> producerDone = new CompletableFuture<>();

  private final Object closeListenerMutex = new Object(); // leaf: guards the two fields below
  private final List<Runnable> closeListeners = new ArrayList<>(); // @GuardedBy closeListenerMutex
  private boolean closeListenersFired; // @GuardedBy closeListenerMutex

  private final ReadinessGate gate;

  FlightServerChannel(
      String name,
      ServerStreamListener listener,
      StreamExecutor executor,
      BufferAllocator allocator,
      Function<? super Throwable, ? extends RuntimeException> errorMapper,
      StreamLimits limits) {
    this.name = Objects.requireNonNull(name, "name");
    this.listener = Objects.requireNonNull(listener, "listener");
    this.executor = Objects.requireNonNull(executor, "executor");
    this.allocator = Objects.requireNonNull(allocator, "allocator");
    this.errorMapper = Objects.requireNonNull(errorMapper, "errorMapper");
    this.gate = new ReadinessGate(limits.creditStallBudget().toNanos());
    this.residentBatches = limits.residentBatches();
    executor.onBatchFinished(this::wakeGate);
  }

  /** The stream's name, e.g. {@code stream-7}. */
  public String name() {
    return name;
  }

  /**
   * The stream's child allocator. The producer builds each source root in it; the registry
   * closes it (and checks it is empty) after the stream root is freed.
   */
  public BufferAllocator allocator() {
    return allocator;
  }

  /** This stream's single-writer executor (T_exec). */
  public StreamExecutor executor() {
    return executor;
  }

  /** Whether {@link #close()} has not run yet. */
  public boolean isOpen() {
    return open.get();
  }

  /** Whether the client cancelled (gRPC already ended the call). */
  public boolean isCancelled() {
    return cancelled;
  }

  /** Completes on T_exec right after the {@code close()}-posted root free has run. */
  public CompletableFuture<Void> rootFreed() {
    return rootFreed;
  }

  /**
   * Completes on T_exec when the producer's terminal task (posted by {@link
   * FlightOutboundHandler#completeStream} or {@link FlightOutboundHandler#sendError}) has run.
   * By FIFO order every batch the producer handed off has run, and so freed its source, by then.
   */
  public CompletableFuture<Void> producerDone() {
    return producerDone;
  }

  /** T_exec: the producer's terminal task ran; it holds no more of this stream's memory. */
  void markProducerDone() {
    producerDone.complete(null);
  }

  /** Test view of the stream root; read it on T_exec or after the executor drained. */
  VectorSchemaRoot streamRoot() {
    return root;
  }

  /**
   * T_caller: the readiness gate. Returns when gRPC can take another message and fewer than
   * {@code residentBatches} batches wait on T_exec (so the one about to be handed off fits).
   * Waits on the on-ready callback (and on cancel, close and batch completion), re-checking after
   * every wake-up, so readiness flipping between checks only causes another wait. The deadline
   * is monotonic; reaching it is a credit stall: the stream is failed with RESOURCE_EXHAUSTED and
   * closed.
   *
   * @throws GatewayException {@code flight.cancelled}, {@code flight.stream_closed}, {@code
   *     flight.interrupted} or {@code flight.credit_stall}
   */
  public void awaitReadyOrThrow() {
    awaitOrStall(() -> roomForOneMore() && listener.isReady());
  }

  /**
   * T_caller, right after a hand-off: returns once the batches waiting on T_exec leave room for
   * the producer to build one more (fewer than {@code residentBatches} wait), so building the
   * next batch never makes the stream hold more than {@code residentBatches}. It does not wait
   * for gRPC's readiness: with one resident batch the next segment is read while gRPC still
   * writes the copy of the previous one. Same wake-ups, failures and budget as {@link
   * #awaitReadyOrThrow()} (a T_exec slower than the budget is a stall too).
   *
   * @throws GatewayException {@code flight.cancelled}, {@code flight.stream_closed}, {@code
   *     flight.interrupted} or {@code flight.credit_stall}
   */
  public void awaitRoomForNextBatch() {
    awaitOrStall(this::roomForOneMore);
  }

  private boolean roomForOneMore() {
    return executor.pendingBatches() < residentBatches;
  }

  private void awaitOrStall(BooleanSupplier readiness) {
    boolean ready = gate.await(this::failIfEnded, readiness);
    if (!ready) {
      GatewayException stall =
          new GatewayException(
                  Cause.BUDGET_EXHAUSTED,
                  "flight.credit_stall",
                  "the client did not accept data within the credit-stall budget")
              .with("budget_ms", TimeUnit.NANOSECONDS.toMillis(gate.budgetNanos()))
              // The read ended early; reading the same ticket again restarts it.
              .withOutcome(Outcome.INCOMPLETE)
              .withActions(Action.RETRY_LATER);
      abort(stall);
      throw stall;
    }
  }

  private void failIfEnded() {
    if (cancelled) {
      throw cancelledFailure();
    }
    if (!open.get()) {
      throw closedFailure();
    }
  }

  /** T_grpc: gRPC's on-ready callback; wakes the gate. Never blocks beyond a signal. */
  public void onReady() {
    wakeGate();
  }

  /**
   * T_exec: sends one batch. Ownership of {@code source} is this call's: it is freed on every
   * exit (after a transfer it is empty, so that free releases nothing).
   *
   * @param appMetadata yields this batch's Flight {@code app_metadata} or {@code null}; invoked
   *     before any root is touched
   * @throws Exception anything the send raised; the caller fails the stream
   */
  public void sendBatch(VectorSchemaRoot source, CheckedSupplier<ByteBuffer> appMetadata)
      throws Exception {
    try {
      executor.checkOnExecutor();
      Objects.requireNonNull(source, "source");
      if (cancelled) {
        throw cancelledFailure();
      }
      if (!open.get()) {
        throw new IllegalStateException(name + ": sendBatch after close()");
      }
      if (terminalSent) {
        throw new IllegalStateException(name + ": sendBatch after the terminal op");
      }
      ByteBuffer metadata = appMetadata == null ? null : appMetadata.get();
      boolean firstBatch = root == null;
      if (firstBatch) {
        root = StreamRoots.adopt(source);
        // Copying writes: gRPC keeps no reference into the root, so the next transfer may
        // replace its buffers while earlier frames are still queued for the wire.
        listener.setUseZeroCopy(false);
        listener.start(root);
      } else {
        StreamRoots.refill(source, root);
      }
      putNext(metadata);
      batchWritten = true;
      // The write copied the batch into gRPC's own buffers: the root need not keep it until the
      // next refill, and emptying it now is what keeps one batch resident instead of two.
      root.clear();
    } finally {
      if (source != null) {
        source.close();
      }
    }
  }

  /** T_exec: {@code completed()} unless closed, cancelled or already terminated. */
  public boolean completeStream() {
    executor.checkOnExecutor();
    if (!open.get() || cancelled || terminalSent) {
      LOG.debug("{}: completeStream skipped (open={}, cancelled={}, terminal={})",
          name, open.get(), cancelled, terminalSent);
      return false;
    }
    terminalSent = true; // set first: a throwing completed() must not be followed by another op
    listener.completed();
    return true;
  }

  /**
   * T_exec: {@code error(mapped)} unless closed, cancelled or already terminated. Once a batch
   * was written the client holds a prefix, never a complete result, whatever ends the stream (a
   * data deadline, the shutdown, a failed send as much as the producer's own failure): the
   * outcome is then {@code incomplete}.
   */
  public boolean sendError(Throwable error) {
    executor.checkOnExecutor();
    if (!open.get() || cancelled || terminalSent) {
      LOG.debug("{}: sendError skipped (open={}, cancelled={}, terminal={})",
          name, open.get(), cancelled, terminalSent, error);
      return false;
    }
    // Built before the terminal is marked: a mapping that fails (an Error too) still ends the
    // stream with INTERNAL, where until 2026-12-07 it left the client waiting for a status.
    RuntimeException mapped = map(error);
    terminalSent = true;
    listener.error(mapped);
    return true;
  }

  /**
   * T_exec: reports {@code error} to the client (when still possible) and closes the channel.
   * Never throws, so a failure path cannot strand the channel open.
   */
  public void failStream(Throwable error) {
    try {
      if (!cancelled) {
        LOG.debug("{}: failing stream", name, error);
      }
      sendError(error);
    } catch (Throwable t) {
      LOG.warn("{}: reporting a stream failure failed", name, t);
    } finally {
      close();
    }
  }

  /** Any thread: posts {@link #failStream(Throwable)} to T_exec, behind queued sends. */
  public void abort(Throwable error) {
    executor.execute(() -> failStream(error));
  }

  /**
   * Any thread: frees a source root that never reached {@link #sendBatch} (gate failure,
   * refused hand-off). Touches neither the stream root nor the lifecycle.
   */
  public void releaseUnsent(VectorSchemaRoot source) {
    if (source != null) {
      source.close();
    }
  }

  /**
   * Any thread, fire-once: the first call posts the stream-root free to T_exec (FIFO, so behind
   * any in-flight send) and fires the close listeners; every later call returns at once. Touches
   * no Arrow buffer and no gRPC on the calling thread. If the call has no terminal op and was not
   * cancelled by then, the posted task ends it with an error so the consumer cannot hang.
   */
  public void close() {
    if (!open.compareAndSet(true, false)) {
      return;
    }
    executor.execute(this::freeStreamRoot);
    wakeGate();
    notifyCloseListeners();
  }

  /** T_grpc: the client cancelled; the call is already over on the wire. */
  public void onChannelCancelled() {
    if (cancelled) {
      return;
    }
    cancelled = true;
    close();
    wakeGate(); // a gate parked by an already-closed channel must still see the cancel
  }

  /**
   * Any thread: runs {@code closeListener} once, when the channel closes (at once if it already has).
   * Listeners run on the closing thread and must not block.
   */
  public void addCloseListener(Runnable closeListener) {
    Objects.requireNonNull(closeListener, "closeListener");
    boolean alreadyFired;
    synchronized (closeListenerMutex) {
      alreadyFired = closeListenersFired;
      if (!alreadyFired) {
        closeListeners.add(closeListener);
      }
    }
    if (alreadyFired) {
      runIsolated(closeListener);
    }
  }

  private void notifyCloseListeners() {
    List<Runnable> snapshot;
    synchronized (closeListenerMutex) {
      snapshot = new ArrayList<>(closeListeners);
      closeListeners.clear();
      closeListenersFired = true;
    }
    for (Runnable l : snapshot) {
      runIsolated(l);
    }
  }

  private void runIsolated(Runnable closeListener) {
    try {
      closeListener.run();
    } catch (Throwable t) {
      // One failing listener must not strand the others (the registry's release among them).
      LOG.error("{}: close listener failed", name, t);
    }
  }

  /** T_exec: the one free site of the stream root. */
  private void freeStreamRoot() {
    try {
      executor.checkOnExecutor();
      if (!terminalSent && !cancelled) {
        terminalSent = true;
        try {
          listener.error(map(closedFailure()));
        } catch (Throwable t) {
          LOG.warn("{}: ending an unterminated call failed", name, t);
        }
      }
      VectorSchemaRoot current = root;
      root = null; // nulled first: nothing can re-fill or re-free it
      if (current != null) {
        current.close();
      }
    } finally {
      rootFreed.complete(null);
    }
  }

  private void putNext(ByteBuffer metadata) {
    if (metadata == null) {
      listener.putNext();
      return;
    }
    int length = metadata.remaining();
    ArrowBuf buf = allocator.buffer(length);
    try {
      buf.setBytes(0, metadata.duplicate());
      buf.writerIndex(length);
      listener.putNext(buf); // Flight owns buf from here, and releases it after writing
    } catch (Throwable t) {
      if (buf.refCnt() > 0) { // Flight may already have released it while failing
        buf.close();
      }
      throw t;
    }
  }

  /**
   * T_exec: the client's exception for {@code error}; never throws. Whatever the failure (a
   * defect's exception too), a written batch makes the read a prefix ({@code incomplete}).
   */
  private RuntimeException map(Throwable error) {
    try {
      RuntimeException mapped = errorMapper.apply(batchWritten
          ? ErrorMapper.gatewayFailure(error).withOutcome(Outcome.INCOMPLETE) : error);
      if (mapped != null) {
        return mapped;
      }
    } catch (Throwable e) { // an Error too: the stream must still end with a status
      LOG.error("{}: error mapper failed", name, e);
    }
    return ErrorMapper.lastResort(batchWritten);
  }

  private void wakeGate() {
    gate.wake();
  }

  private static GatewayException cancelledFailure() {
    return new GatewayException(
        Cause.CANCELLED, "flight.cancelled", "the client cancelled the stream");
  }

  private static GatewayException closedFailure() {
    return new GatewayException(
        Cause.TRANSPORT, "flight.stream_closed", "the stream was closed before it completed");
  }
}
