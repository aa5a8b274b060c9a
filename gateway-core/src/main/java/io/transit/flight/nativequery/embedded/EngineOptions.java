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
 * @param shutdownWait how long {@code close()} waits for running queries, and again for those it
 *     then cancelled in DuckDB
 * @param deferExecution record accepted queries without running them (tests of resume); they run
 *     when an engine without this flag opens the same state directory
 * @param faults fault-injection hook around the journal commit
 * @param duck DuckDB's own memory limit, threads and spill directory (see {@link DuckSettings})
 * @param retention retained results' maximum age and total bytes, and the sweep interval
 * @param lease the execution lease and the takeover scan interval (see {@link LeasePolicy})
 * @param recipient the service id (unsigned) every principal proof must name as its recipient:
 *     the gateway's service id. A submit whose proof names another recipient is recorded as
 *     REJECTED {@code query.access_denied}. 0 means "not configured": the recipient is then not
 *     checked, which is only for tests and tools that do not care; a deployed engine must set it
 *     ({@link #withRecipient}), and {@link EmbeddedEngine#open} logs a warning when it is 0.
 * @param segments where retained segments are kept: the state directory (default) or an S3-API
 *     bucket ({@link SegmentSettings})
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
    CommandFaults faults,
    DuckSettings duck,
    long recipient,
    RetentionPolicy retention,
    SegmentSettings segments,
    LeasePolicy lease) {
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
    Objects.requireNonNull(duck, "duck");
    Objects.requireNonNull(retention, "retention");
    Objects.requireNonNull(segments, "segments");
    Objects.requireNonNull(lease, "lease");
  }

  public static EngineOptions defaults() {
    return new EngineOptions(
        2, 1, 1 << 20, 1024, 1L << 30, 65_536, Duration.ofSeconds(10), false, CommandFaults.NONE,
        DuckSettings.defaults(), 0,
        RetentionPolicy.defaults(), SegmentSettings.local(), LeasePolicy.defaults());
  }

  public EngineOptions withDeferExecution(boolean defer) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, defer, faults, duck, recipient,
        retention, segments, lease);
  }

  public EngineOptions withFaults(CommandFaults f) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, f, duck, recipient,
        retention, segments, lease);
  }

  public EngineOptions withExecutionThreads(int threads) {
    return new EngineOptions(threads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, recipient,
        retention, segments, lease);
  }

  /** These options with DuckDB's memory limit, threads and spill directory set to {@code d}. */
  public EngineOptions withDuck(DuckSettings d) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, d, recipient,
        retention, segments, lease);
  }

  /** These options with the engine's Arrow allocator limited to {@code bytes}. */
  public EngineOptions withMemoryLimitBytes(long bytes) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        bytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, recipient,
        retention, segments, lease);
  }

  /**
   * These options with retained results released after {@code maxAge} or past {@code maxBytes}
   * in total (oldest first), swept every {@code interval}.
   */
  public EngineOptions withRetention(Duration maxAge, long maxBytes, Duration interval) {
    return withRetention(new RetentionPolicy(maxAge, maxBytes, interval));
  }

  /** These options with {@code policy}'s result retention and history bound. */
  public EngineOptions withRetention(RetentionPolicy policy) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, recipient,
        policy, segments, lease);
  }

  /** These options with proofs checked against {@code serviceId} (0: not checked). */
  public EngineOptions withRecipient(long serviceId) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, serviceId,
        retention, segments, lease);
  }

  /** These options with retained segments kept as {@code s} says. */
  public EngineOptions withSegments(SegmentSettings s) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, recipient,
        retention, s, lease);
  }

  /** These options with close waiting {@code wait} for running queries (again once cancelled). */
  public EngineOptions withShutdownWait(Duration wait) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, wait, deferExecution, faults, duck, recipient,
        retention, segments, lease);
  }

  /** These options with execution leases of {@code lease}, scanned for expiry every {@code scan}. */
  public EngineOptions withLease(Duration lease, Duration scan) {
    return new EngineOptions(executionThreads, firstSequence, maxBundleBytes, maxParts,
        memoryLimitBytes, exportBatchRows, shutdownWait, deferExecution, faults, duck, recipient,
        retention, segments, new LeasePolicy(lease, scan));
  }
}
