package io.transit.flight.benchmarks;

import com.google.protobuf.ByteString;
import io.transit.flight.admission.CommandChain;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.SignedCommand;
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
 * Admission's signing work per statement: one signed begin command, and the whole derived chain
 * (begin, part, seal, submit: four Ed25519 signatures and the bundle digest) of a typical
 * statement's canonical bundle, signed on the calling thread alone and with the gateway's
 * {@link SignaturePool} (one helper per spare processor).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class CommandSigningBenchmark {
  private NativeCommand begin;
  private byte[] bundle;
  private SignaturePool signers;

  @Setup(Level.Trial)
  public void setUp() {
    signers = SignaturePool.forProcessors("bench-sign");
    bundle = Fixtures.bundle(DemoData.declaration(DemoData.PRIMITIVE, 1),
        "SELECT SUM(a) FROM " + DemoData.PRIMITIVE + " WHERE c < 100");
    begin = NativeCommand.newBuilder()
        .setPrincipal(Fixtures.PRINCIPAL)
        .setSequence(1)
        .setNamespace(1)
        .setBegin(BeginUpload.newBuilder()
            .setBundleBytes(bundle.length)
            .setPartCount(1)
            .setBundleSha256(ByteString.copyFrom(Digests.sha256(bundle))))
        .build();
  }

  @Benchmark
  public SignedCommand signBegin() {
    return NativeSignatures.signCommand(begin, Fixtures.KEY);
  }

  @Benchmark
  public CommandChain deriveChain() {
    return CommandChain.derive(bundle, Fixtures.PRINCIPAL, Fixtures.KEY, 1,
        CommandChain.DEFAULT_PART_BYTES);
  }

  @Benchmark
  public CommandChain deriveChainConcurrent() {
    return CommandChain.derive(bundle, Fixtures.PRINCIPAL, Fixtures.KEY, 1,
        CommandChain.DEFAULT_PART_BYTES, signers);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    signers.close();
  }
}
