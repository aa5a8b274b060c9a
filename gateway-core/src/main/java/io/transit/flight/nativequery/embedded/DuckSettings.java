package io.transit.flight.nativequery.embedded;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;

/**
 * DuckDB's own resources, which sit outside every Java budget: the memory its buffer manager may
 * hold (scans, hash tables, the external file cache), the threads a query may use, and where an
 * operator larger than the limit spills. Publications are scanned in place, so none of this grows
 * with the data's size — only with what a query keeps at once.
 *
 * @param memoryLimitBytes DuckDB's {@code memory_limit}
 * @param threads DuckDB's {@code threads}
 * @param tempDirectory DuckDB's {@code temp_directory}; null: {@code duckdb-tmp/} in the engine's
 *     state directory
 */
public record DuckSettings(long memoryLimitBytes, int threads, Path tempDirectory) {
  /** The smallest memory limit accepted: below it DuckDB cannot hold a Parquet row group. */
  public static final long MIN_MEMORY_LIMIT_BYTES = 32L << 20;

  public DuckSettings {
    if (memoryLimitBytes < MIN_MEMORY_LIMIT_BYTES) {
      throw new IllegalArgumentException("memoryLimitBytes: " + memoryLimitBytes
          + " (expected: >= " + MIN_MEMORY_LIMIT_BYTES + ")");
    }
    if (threads < 1) {
      throw new IllegalArgumentException("threads: " + threads + " (expected: >= 1)");
    }
  }

  /** Defaults sized for this machine: {@link #defaultMemoryLimitBytes()}, one thread per core. */
  public static DuckSettings defaults() {
    return new DuckSettings(defaultMemoryLimitBytes(), defaultThreads(), null);
  }

  /**
   * An eighth of physical memory, between 256 MiB and 4 GiB: DuckDB's own default (80 % of
   * memory) would leave nothing for the JVM, the allocators and the page cache the in-place scans
   * read through.
   */
  public static long defaultMemoryLimitBytes() {
    long physical = physicalMemoryBytes();
    return Math.max(256L << 20, Math.min(4L << 30, physical / 8));
  }

  public static int defaultThreads() {
    return Runtime.getRuntime().availableProcessors();
  }

  /** Physical memory, or 2 GiB when the platform does not say. */
  static long physicalMemoryBytes() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getTotalMemorySize();
    }
    return 2L << 30;
  }

  /** The spill directory for an engine whose state lives in {@code stateDir}. */
  Path tempDirectoryUnder(Path stateDir) {
    return tempDirectory != null ? tempDirectory : stateDir.resolve("duckdb-tmp");
  }
}
