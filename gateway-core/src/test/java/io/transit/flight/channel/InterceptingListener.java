package io.transit.flight.channel;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.IpcOption;

/**
 * Wraps the real Flight listener of a DoGet: every call reaches gRPC, but a test can run a hook
 * (block on a latch, throw) before {@code start}/{@code putNext}, override readiness, and count
 * what the channel did: ops off its executor, terminal ops, and ops issued by tasks that started
 * after the cancel had been delivered.
 */
final class InterceptingListener implements ServerStreamListener {
  private final ServerStreamListener delegate;

  volatile Runnable beforeStart = () -> {};
  volatile Runnable beforePutNext = () -> {};
  /**
   * Set: {@code putNext(metadata)} releases the buffer and then throws, as Flight's write does
   * when it fails after taking the buffer ({@code ArrowMessage.close()} in its failure path).
   */
  volatile boolean releaseMetadataThenThrow;
  /** Non-null: readiness as the test decides it, instead of gRPC's. */
  volatile BooleanSupplier ready;

  private volatile StreamExecutor executor;
  private volatile Runnable onReadyHandler = () -> {};
  private volatile boolean cancelDelivered;
  private volatile long tasksStartedAtCancel;

  final AtomicInteger starts = new AtomicInteger();
  final AtomicInteger putNexts = new AtomicInteger();
  final AtomicInteger completes = new AtomicInteger();
  final AtomicInteger errors = new AtomicInteger();
  final AtomicInteger cancels = new AtomicInteger();
  final AtomicInteger opsOffExecutor = new AtomicInteger();
  final AtomicInteger opsAfterCancel = new AtomicInteger();
  /** Readiness checks that answered "not ready" (the gate parked, or was about to). */
  final AtomicInteger notReady = new AtomicInteger();
  volatile Throwable lastError;

  InterceptingListener(ServerStreamListener delegate) {
    this.delegate = delegate;
  }

  /** Binds the stream's executor once {@code registry.open} returned. */
  void attach(FlightServerChannel channel) {
    this.executor = channel.executor();
  }

  int terminalOps() {
    return completes.get() + errors.get();
  }

  /** Runs the on-ready handler the channel registered, as gRPC would on T_grpc. */
  void fireOnReady() {
    onReadyHandler.run();
  }

  private void observeOp() {
    StreamExecutor exec = executor;
    if (exec == null || !exec.inExecutor()) {
      opsOffExecutor.incrementAndGet();
      return;
    }
    if (cancelDelivered && exec.startedTasks() > tasksStartedAtCancel) {
      opsAfterCancel.incrementAndGet();
    }
  }

  @Override
  public boolean isCancelled() {
    return delegate.isCancelled();
  }

  @Override
  public void setOnCancelHandler(Runnable handler) {
    delegate.setOnCancelHandler(
        () -> {
          handler.run();
          StreamExecutor exec = executor;
          tasksStartedAtCancel = exec == null ? 0 : exec.startedTasks();
          cancelDelivered = true;
          cancels.incrementAndGet();
        });
  }

  @Override
  public boolean isReady() {
    BooleanSupplier override = ready;
    boolean answer = override != null ? override.getAsBoolean() : delegate.isReady();
    if (!answer) {
      notReady.incrementAndGet();
    }
    return answer;
  }

  @Override
  public void setOnReadyHandler(Runnable handler) {
    onReadyHandler = handler;
    delegate.setOnReadyHandler(handler);
  }

  @Override
  public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
    observeOp();
    starts.incrementAndGet();
    beforeStart.run();
    delegate.start(root, dictionaries, option);
  }

  @Override
  public void putNext() {
    observeOp();
    putNexts.incrementAndGet();
    beforePutNext.run();
    delegate.putNext();
  }

  @Override
  public void putNext(ArrowBuf metadata) {
    observeOp();
    putNexts.incrementAndGet();
    beforePutNext.run();
    if (releaseMetadataThenThrow) {
      metadata.close();
      throw new IllegalStateException("the write failed after taking the metadata buffer");
    }
    delegate.putNext(metadata);
  }

  @Override
  public void putMetadata(ArrowBuf metadata) {
    observeOp();
    delegate.putMetadata(metadata);
  }

  @Override
  public void error(Throwable ex) {
    observeOp();
    errors.incrementAndGet();
    lastError = ex;
    delegate.error(ex);
  }

  @Override
  public void completed() {
    observeOp();
    completes.incrementAndGet();
    delegate.completed();
  }

  @Override
  public void setUseZeroCopy(boolean enabled) {
    delegate.setUseZeroCopy(enabled);
  }
}
