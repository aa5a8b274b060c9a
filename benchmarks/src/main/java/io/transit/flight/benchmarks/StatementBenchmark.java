package io.transit.flight.benchmarks;

import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.nativequery.embedded.PlanCache;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
 * A small statement's engine side, as the gateway drives it: the announced chain of four signed
 * commands (signed outside the measurement) verified, decided and recorded, the early run's
 * result published by the one durable terminal commit, then the status, the manifest and the
 * inline segment read back. The engine compiles through the daemon's plan cache. No gRPC and no
 * signing: the gateway's part is the bench's P2.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
@Fork(value = 1, jvmArgsAppend = "--add-opens=java.base/java.nio=ALL-UNNAMED")
public class StatementBenchmark {
  private static final ReadAccess ACCESS =
      new ReadAccess(Fixtures.PRINCIPAL, false, 0, DemoData.SOURCE);

  private Path dir;
  private Fixtures.Engine engine;
  private byte[] bundle;
  private List<SignedCommand> next;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("transit-jmh-statement");
    engine = Fixtures.engine(dir, false, PlanCache.withDefaults());
    bundle = Fixtures.bundle(engine.primitive(), "SELECT COUNT(*) FROM " + DemoData.PRIMITIVE);
  }

  /** Signs the next statement's chain; sequences continue where the journal stands. */
  @Setup(Level.Invocation)
  public void nextChain() {
    next = engine.nextChain(bundle);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    engine.engine().close();
    Fixtures.deleteTree(dir);
  }

  @Benchmark
  public int statement() throws InterruptedException {
    engine.engine().expect(next);
    long correlation = engine.send(next);
    QueryStatus done = engine.engine().awaitQuery(ACCESS, correlation,
        System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    if (done.getState() != QueryStatus.State.SUCCEEDED) {
      throw new IllegalStateException("statement " + done.getState() + ": " + done.getMessage());
    }
    byte[] manifest = engine.engine().readManifest(ACCESS, correlation);
    return manifest.length + engine.engine().readSegment(ACCESS, correlation, 0, 1 << 20).length;
  }
}
