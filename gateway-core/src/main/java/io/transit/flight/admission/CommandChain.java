package io.transit.flight.admission;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.BeginUpload;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.SealUpload;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.SubmitQuery;
import io.transit.flight.proto.UploadPart;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The signed native commands that upload, seal and submit one canonical bundle, with consecutive
 * sequences from the caller's first sequence S:
 *
 * <pre>
 *   S         begin  (namespace S, bundle size, part count, bundle SHA-256)
 *   S+1..S+p  part   (index 0..p-1, at most partBytes bytes each, in bundle order)
 *   S+p+1     seal   (bundle SHA-256)
 *   S+p+2     submit (bundle SHA-256)
 * </pre>
 *
 * Every command carries the principal, its sequence and namespace S and is serialized and
 * signed by {@link NativeSignatures#signCommand} (deterministic bytes, Ed25519 by the principal's
 * key over {@code Digests.domainSha256("transit.native.command.v1", commandBytes)}). The next
 * sequence is S + p + 3. Sequences are unsigned 64-bit; a chain whose next sequence would pass
 * 2^64−1 is refused ({@code INVALID_CALLER_FIELD}, {@code admission.sequence_overflow}).
 *
 * <p>Immutable and thread-safe.
 */
public final class CommandChain {
  public static final int DEFAULT_PART_BYTES = 4096;
  /** Upper bound for a configured part size; keeps one command well inside message budgets. */
  public static final int MAX_PART_BYTES = 1 << 20;

  private final long principal;
  private final long firstSequence;
  private final List<SignedCommand> commands;
  private final byte[] bundleSha256;

  private CommandChain(
      long principal, long firstSequence, List<SignedCommand> commands, byte[] bundleSha256) {
    this.principal = principal;
    this.firstSequence = firstSequence;
    this.commands = List.copyOf(commands);
    this.bundleSha256 = bundleSha256;
  }

  /** Derives the chain for {@code bundleBytes} (copied into parts, not retained), signing inline. */
  public static CommandChain derive(
      byte[] bundleBytes, long principal, Ed25519.KeyPair key, long firstSequence, int partBytes) {
    return derive(bundleBytes, principal, key, firstSequence, partBytes, SignaturePool.inline());
  }

  /**
   * As above, with the commands' signatures computed concurrently on {@code signers} (they are
   * independent: each covers its own command bytes). The bytes are the same as a sequential
   * derivation's; signing is deterministic.
   */
  public static CommandChain derive(byte[] bundleBytes, long principal, Ed25519.KeyPair key,
      long firstSequence, int partBytes, SignaturePool signers) {
    Objects.requireNonNull(signers, "signers");
    Objects.requireNonNull(key, "key");
    int parts = check(bundleBytes, firstSequence, partBytes);
    long count = parts + 3L;
    byte[] digest = Digests.sha256(bundleBytes);
    ByteString digestBytes = ByteString.copyFrom(digest);
    List<NativeCommand> unsigned = new ArrayList<>((int) count);
    long seq = firstSequence;
    unsigned.add(base(principal, seq++, firstSequence)
        .setBegin(BeginUpload.newBuilder()
            .setBundleBytes(bundleBytes.length)
            .setPartCount(parts)
            .setBundleSha256(digestBytes))
        .build());
    for (int i = 0; i < parts; i++) {
      int from = i * partBytes;
      int to = Math.min(bundleBytes.length, from + partBytes);
      unsigned.add(base(principal, seq++, firstSequence)
          .setPart(UploadPart.newBuilder()
              .setIndex(i)
              .setData(ByteString.copyFrom(bundleBytes, from, to - from)))
          .build());
    }
    unsigned.add(base(principal, seq++, firstSequence)
        .setSeal(SealUpload.newBuilder().setBundleSha256(digestBytes))
        .build());
    unsigned.add(base(principal, seq, firstSequence)
        .setSubmit(SubmitQuery.newBuilder().setBundleSha256(digestBytes))
        .build());
    List<SignedCommand> out = signers.map(unsigned, c -> NativeSignatures.signCommand(c, key));
    return new CommandChain(principal, firstSequence, out, digest);
  }

  /**
   * Refuses, as {@link #derive} would, a chain that cannot be built for these arguments, before
   * anything is signed or announced; returns the bundle's part count.
   */
  public static int check(byte[] bundleBytes, long firstSequence, int partBytes) {
    Objects.requireNonNull(bundleBytes, "bundleBytes");
    if (partBytes < 1 || partBytes > MAX_PART_BYTES) {
      throw new IllegalArgumentException(
          "partBytes: " + partBytes + " (expected: 1.." + MAX_PART_BYTES + ")");
    }
    if (bundleBytes.length == 0) {
      throw new IllegalArgumentException("bundleBytes: empty (expected: a canonical bundle)");
    }
    int parts = (int) ((bundleBytes.length + (long) partBytes - 1) / partBytes);
    long count = parts + 3L;
    // The last command is S + count - 1 and the next sequence S + count must still be a u64.
    if (Long.compareUnsigned(firstSequence, -1L - count) > 0) {
      throw GatewayException.of(
              Cause.INVALID_CALLER_FIELD,
              "admission.sequence_overflow",
              "the request sequence leaves no room for the upload's " + count + " commands")
          .with("first_sequence", Unsigned.u64(firstSequence))
          .with("commands", count);
    }
    return parts;
  }

  private static NativeCommand.Builder base(long principal, long sequence, long namespace) {
    return NativeCommand.newBuilder()
        .setPrincipal(principal)
        .setSequence(sequence)
        .setNamespace(namespace);
  }

  public long principal() {
    return principal;
  }

  /** The first sequence, which is also the upload namespace. */
  public long firstSequence() {
    return firstSequence;
  }

  public long namespace() {
    return firstSequence;
  }

  /** The sequence after the submit: what a following statement must use. */
  public long nextSequence() {
    return firstSequence + commands.size();
  }

  /** The signed commands in sending order (begin, parts, seal, submit). */
  public List<SignedCommand> commands() {
    return commands;
  }

  /** The sequence of command {@code index} (unsigned arithmetic; cannot wrap, see derive). */
  public long sequenceAt(int index) {
    Objects.checkIndex(index, commands.size());
    return firstSequence + index;
  }

  public int partCount() {
    return commands.size() - 3;
  }

  public byte[] bundleSha256() {
    return bundleSha256.clone();
  }

  @Override
  public String toString() {
    return "CommandChain[principal=" + Long.toUnsignedString(principal)
        + ", sequences=" + Long.toUnsignedString(firstSequence)
        + ".." + Long.toUnsignedString(nextSequence() - 1)
        + ", bundleSha256=" + Digests.hex(bundleSha256) + "]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CommandChain other
        && principal == other.principal
        && firstSequence == other.firstSequence
        && commands.equals(other.commands)
        && Arrays.equals(bundleSha256, other.bundleSha256);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(principal) * 31 + commands.hashCode();
  }
}
