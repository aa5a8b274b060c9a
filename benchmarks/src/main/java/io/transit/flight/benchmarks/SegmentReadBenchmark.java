package io.transit.flight.benchmarks;

import io.transit.flight.crypto.Digests;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.cells.CellAdapter;
import io.transit.flight.query.QueryCompiler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
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
 * The serving path's read of one retained segment (65,536 rows × 4 columns of the demo primitive
 * Table): {@code readSegment} into an allocator (rights, manifest, file read and size check) and
 * into the heap for comparison, its SHA-256 digest alone, and read + digest check + adapt together
 * as the DoGet producer does per batch, against the earlier heap path (read into a byte array,
 * digest, copy into Arrow memory, adapt). The segment file is in the page cache after the first
 * read, as it is for a hot result.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--add-opens=java.base/java.nio=ALL-UNNAMED")
public class SegmentReadBenchmark {
  private static final String SQL = "SELECT id, a, b, c FROM " + DemoData.PRIMITIVE;

  private Path dir;
  private Fixtures.Engine engine;
  private ReadAccess access;
  private long correlation;
  private byte[] segment;
  private byte[] sha256;
  private Schema output;
  private BufferAllocator allocator;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("transit-jmh-segment");
    engine = Fixtures.engine(dir, false);
    correlation = engine.admit(SQL);
    access = new ReadAccess(Fixtures.PRINCIPAL, false, 0, DemoData.SOURCE);
    QueryStatus s = engine.engine().awaitQuery(access, correlation,
        System.nanoTime() + TimeUnit.MINUTES.toNanos(5));
    if (s.getState() != QueryStatus.State.SUCCEEDED) {
      throw new IllegalStateException("setup query " + s.getState() + ": " + s.getMessage());
    }
    segment = read();
    sha256 = Digests.sha256(segment);
    output = QueryCompiler.outputSchema(QueryCompiler.compile(SQL, engine.primitive()));
    allocator = new RootAllocator();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    allocator.close();
    engine.engine().close();
    Fixtures.deleteTree(dir);
  }

  private byte[] read() {
    return engine.engine().readSegment(access, correlation, 0, 16L << 20);
  }

  @Benchmark
  public byte[] readSegmentToHeap() {
    return read();
  }

  @Benchmark
  public long readSegment() {
    try (ArrowBuf buf = readIntoAllocator()) {
      return buf.writerIndex();
    }
  }

  private ArrowBuf readIntoAllocator() {
    return engine.engine().readSegment(access, correlation, 0, 16L << 20, allocator);
  }

  @Benchmark
  public byte[] digest() {
    return Digests.sha256(segment);
  }

  /** What the DoGet producer does per batch: read into Arrow memory, verify the digest, convert. */
  @Benchmark
  public int readVerifyAdapt() {
    VectorSchemaRoot root;
    try (ArrowBuf bytes = readIntoAllocator()) {
      long length = bytes.writerIndex();
      if (!MessageDigest.isEqual(Digests.sha256(bytes, length), sha256)) {
        throw new IllegalStateException("segment digest changed");
      }
      root = CellAdapter.adapt(bytes, length, output, 0, allocator);
    }
    try (root) {
      return root.getRowCount();
    }
  }

  /** The same through the heap: the producer's path before segments were read into Arrow memory. */
  @Benchmark
  public int readVerifyAdaptViaHeap() {
    byte[] bytes = read();
    if (!MessageDigest.isEqual(Digests.sha256(bytes), sha256)) {
      throw new IllegalStateException("segment digest changed");
    }
    try (VectorSchemaRoot root = CellAdapter.adapt(bytes, output, 0, allocator)) {
      return root.getRowCount();
    }
  }
}
