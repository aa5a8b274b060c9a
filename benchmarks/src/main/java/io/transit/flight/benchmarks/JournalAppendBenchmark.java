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
 * (begin, part, seal, submit), each verified, decided and committed to the journal before it is
 * answered, and then the principal's next sequence read, which makes them durable. Execution is
 * deferred so only admission and the journal are measured; the chain is signed outside the
 * measurement. Reported per command.
 *
 * <p>With execution deferred no submit has an early result to commit with it, so all four
 * commits are deferred ({@code synchronous=NORMAL}, no fsync; docs/admission.md §10) and the
 * fsync that makes them durable is the flush {@code nextSequence} does before it answers. Until
 * 2026-12-06 that read was in the next invocation's untimed setup, so the benchmark timed four
 * deferred commits and no fsync at all; it now ends the measured invocation, as the gateway's
 * next GetFlightInfo reads it, and the figure is a quarter of one fsync higher.
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
  /** The principal's next sequence, read by the previous invocation (or the trial's setup). */
  private long sequence;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("transit-jmh-journal");
    engine = Fixtures.engine(dir, true);
    bundle = Fixtures.bundle(engine.primitive(),
        "SELECT COUNT(*) FROM " + DemoData.PRIMITIVE + " WHERE c < 100");
    sequence = engine.engine().nextSequence(Fixtures.PRINCIPAL);
  }

  /**
   * Signs the next statement's chain at the sequence the last invocation read: reading it here
   * would flush the journal outside the measurement.
   */
  @Setup(Level.Invocation)
  public void nextChain() {
    next = engine.chainAt(bundle, sequence);
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
    engine.send(next);
    // The four deferred commits reach the disk here: nextSequence flushes the journal first.
    sequence = engine.engine().nextSequence(Fixtures.PRINCIPAL);
    return sequence;
  }
}
