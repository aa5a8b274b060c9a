package io.transit.flight.benchmarks;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.NativeSignatures;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * One Ed25519 signature and one verification of a 32-byte message (the size every signature in
 * the project covers) with a key built once, as the gateway and the engine hold theirs. Run with
 * {@code -prof gc} for the garbage per operation.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class Ed25519Benchmark {
  private Ed25519.PublicKey publicKey;
  private byte[] message;
  private byte[] signature;

  @Setup(Level.Trial)
  public void setUp() {
    publicKey = Fixtures.KEY.publicKey();
    message = Digests.domainSha256(NativeSignatures.COMMAND_DOMAIN, new byte[96]);
    signature = Fixtures.KEY.sign(message);
  }

  @Benchmark
  public byte[] sign() {
    return Fixtures.KEY.sign(message);
  }

  @Benchmark
  public boolean verify() {
    if (!publicKey.verify(message, signature)) {
      throw new IllegalStateException("the signature must verify");
    }
    return true;
  }
}
