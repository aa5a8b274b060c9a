package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

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

  /**
   * The machine as the process found it at start. Read once: a container resized while the
   * daemon runs would otherwise change the defaults a SIGHUP resolves, and the reload, comparing
   * them with what the daemon was sized with at start, would be refused for a file that did not
   * change.
   */
  public static final int PROCESSORS = Runtime.getRuntime().availableProcessors();

  private static final long PHYSICAL_MEMORY_BYTES = physicalMemoryBytes();

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
    return Math.max(256L << 20, Math.min(4L << 30, PHYSICAL_MEMORY_BYTES / 8));
  }

  /** The processors this process saw when it started (see {@link #PROCESSORS}). */
  public static int defaultThreads() {
    return PROCESSORS;
  }

  /** Physical memory, or 2 GiB when the platform does not say. */
  static long physicalMemoryBytes() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getTotalMemorySize();
    }
    return 2L << 30;
  }

  /**
   * Applies these resources, and the session settings every statement relies on, to a new DuckDB
   * database: the engine's at open, and the benchmarks' when they time a statement's run alone.
   * Creates the spill directory (owner only) when it is missing.
   */
  public void apply(Connection db, Path stateDir) throws SQLException, IOException {
    Path temp = tempDirectoryUnder(stateDir);
    // Spilled operator state holds rows of the Tables: as private as the rest of the state.
    PrivateFiles.directories(temp);
    try (Statement s = db.createStatement()) {
      s.execute("SET memory_limit = '" + memoryLimitBytes + "B'");
      s.execute("SET threads = " + threads);
      s.execute("SET temp_directory = " + DuckTables.literal(temp.toAbsolutePath().toString()));
      // Row order of a scan is file order, then row-group order: re-execution writes the same
      // segments. (DuckDB's default, set so no future default can change it.)
      s.execute("SET preserve_insertion_order = true");
      // Footers are parsed once, not per statement; a file that changes is caught by
      // DuckTables.checkUnchanged before DuckDB reads it.
      s.execute("SET parquet_metadata_cache = true");
      // A statement reads one Table without joins or subqueries (docs/queries.md), so the join
      // order optimizer has nothing to order, yet it reads the statistics of every row group of
      // every file at each bind — and a Parquet scan binds again at every execution. At 20M rows
      // (163 row groups) that was two thirds of a COUNT(*)'s 0.8 ms in DuckDB.
      s.execute("SET disabled_optimizers = 'join_order'");
    }
  }

  /** The spill directory for an engine whose state lives in {@code stateDir}. */
  Path tempDirectoryUnder(Path stateDir) {
    return tempDirectory != null ? tempDirectory : stateDir.resolve("duckdb-tmp");
  }
}
