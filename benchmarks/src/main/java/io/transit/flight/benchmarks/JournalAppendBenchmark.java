package io.transit.flight.benchmarks;

import io.transit.flight.nativequery.embedded.DemoData;
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
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Durable journal appends: {@code EmbeddedEngine.send} of a statement's four signed commands
 * (begin, part, seal, submit), each committed to the journal before it is answered. Execution is
 * deferred so only admission and the journal are measured; the chain is signed outside the
 * measurement. Reported per command.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--add-opens=java.base/java.nio=ALL-UNNAMED")
public class JournalAppendBenchmark {
  private static final int COMMANDS = 4;

  private Path dir;
  private Fixtures.Engine engine;
  private byte[] bundle;
  private List<SignedCommand> next;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("transit-jmh-journal");
    engine = Fixtures.engine(dir, true);
    bundle = Fixtures.bundle(engine.primitive(),
        "SELECT COUNT(*) FROM " + DemoData.PRIMITIVE + " WHERE c < 100");
  }

  /** Signs the next statement's chain; sequences continue where the journal stands. */
  @Setup(Level.Invocation)
  public void nextChain() {
    next = engine.nextChain(bundle);
    if (next.size() != COMMANDS) {
      throw new IllegalStateException("chain of " + next.size() + " commands");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    engine.engine().close();
    Fixtures.deleteTree(dir);
  }

  @Benchmark
  @OperationsPerInvocation(COMMANDS)
  public long sendStatement() {
    return engine.send(next);
  }
}
