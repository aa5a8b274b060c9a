package io.transit.flight.nativequery.embedded;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of the embedded engine, all with safe defaults ({@link #defaults()}).
 *
 * @param executionThreads threads running accepted queries (bounded pool)
 * @param firstSequence the next sequence of a principal with no journal yet
 * @param maxBundleBytes the largest bundle a begin command may declare
 * @param maxParts the most parts a begin command may declare
 * @param memoryLimitBytes the engine's Arrow allocator limit (query execution buffers)
 * @param exportBatchRows rows per Arrow batch DuckDB exports
 * @param shutdownWait how long {@code close()} waits for running queries
 * @param deferExecution record accepted queries without running them (tests of resume); they run
 *     when an engine without this flag opens the same state directory
 * @param faults fault-injection hook around the journal commit
 */
public record EngineOptions(
    int executionThreads,
    long firstSequence,
    long maxBundleBytes,
    int maxParts,
    long memoryLimitBytes,
    int exportBatchRows,
    Duration shutdownWait,
    boolean deferExecution,
    CommandFaults faults) {
  public EngineOptions {
    if (executionThreads < 1) {
      throw new IllegalArgumentException(
          "executionThreads: " + executionThreads + " (expected: >= 1)");
    }
    if (maxBundleBytes < 1 || maxParts < 1 || memoryLimitBytes < 1 || exportBatchRows < 1) {
      throw new IllegalArgumentException("bundle, part, memory and batch limits must be >= 1");
    }
    Objects.requireNonNull(shutdownWait, "shutdownWait");
    Objects.requireNonNull(faults, "faults");
  }

  public static EngineOptions defaults() {
    return new EngineOptions(
        2, 1, 1 << 20, 1024, 1L << 30, 65_536, Duration.ofSeconds(10), false, CommandFaults.NONE);
  }

  public EngineOptions withDeferExecution(boolean defer) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, defer, faults);
  }

  public EngineOptions withFaults(CommandFaults f) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, f);
  }

  public EngineOptions withExecutionThreads(int threads) {
    return new EngineOptions(threads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults);
  }
}
