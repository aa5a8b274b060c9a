package io.transit.flight.benchmarks;

import io.transit.flight.cells.CellAdapter;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cell adapter on one retained segment of 65,536 rows × 4 int64 columns (one Flight batch of
 * {@code SELECT a, b, c, d}): IPC decode, full validation, state checks and the value transfer,
 * in place on a segment already in Arrow memory (the serving path) and from a heap copy (which
 * adds one copy of the segment). The returned batch is closed inside the measurement, as the
 * channel does after sending it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--add-opens=java.base/java.nio=ALL-UNNAMED")
public class CellAdapterBenchmark {
  private BufferAllocator allocator;
  private byte[] segment;
  private ArrowBuf inArrowMemory;
  private Schema output;

  @Setup(Level.Trial)
  public void setUp() {
    allocator = new RootAllocator();
    segment = Fixtures.segment(allocator);
    inArrowMemory = allocator.buffer(segment.length);
    inArrowMemory.setBytes(0, segment);
    output = Fixtures.outputSchema();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    inArrowMemory.close();
    // Closing a root allocator with bytes left throws: the benchmark also proves no leak.
    allocator.close();
  }

  @Benchmark
  public int adapt() {
    try (VectorSchemaRoot root =
        CellAdapter.adapt(inArrowMemory, segment.length, output, 0, allocator)) {
      return root.getRowCount();
    }
  }

  @Benchmark
  public int adaptFromHeap() {
    try (VectorSchemaRoot root = CellAdapter.adapt(segment, output, 0, allocator)) {
      return root.getRowCount();
    }
  }
}
