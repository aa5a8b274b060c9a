package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.PrincipalProof;
import io.transit.flight.proto.SignedCommand;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Signature verifications started ahead of the command that needs them, so that a sending
 * thread finds the verdict ready instead of computing it:
 *
 * <ul>
 *   <li>a chain's command signatures, when the gateway announces the chain ({@link
 *       io.transit.flight.nativequery.NativeQueryClient#expect}): the later commands are verified
 *       on a {@link SignaturePool} helper while the first ones are decided and committed;
 *   <li>a sealed bundle's principal proof: when a seal completes an upload the engine holds the
 *       assembled bundle, and its proof is verified while the seal commits and the gateway sends
 *       the submit.
 * </ul>
 *
 * <p>A verdict is the pure function of (public key, message, signature), and that triple is the
 * memo's key: a command or proof is checked against the principal's <em>current</em> key, so a
 * rotation in between simply misses and verifies inline. Nothing here decides anything a
 * sequential verification would not. A sending thread never waits for a check that no helper
 * has started: it runs that check itself, so a busy machine costs at most the wait for one
 * check already running.
 *
 * <p>Threads: every method may be called on sending threads, also inside journal transactions;
 * the verdicts are computed on the pool's helper threads. The map is guarded by {@code this} and
 * holds at most {@link #CAPACITY} entries (the oldest is dropped: a prefetch whose command never
 * comes costs one slot until then). The pool belongs to the engine.
 */
final class SignatureVerdicts {
  static final int CAPACITY = 256;
  /** A verdict in progress is one Ed25519 verification; past this the caller verifies itself. */
  private static final long WAIT_MILLIS = 1_000;

  private final SignaturePool pool;
  // @GuardedBy("this")
  private final Map<ByteBuffer, RunnableFuture<Boolean>> pending =
      new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(
            Map.Entry<ByteBuffer, RunnableFuture<Boolean>> eldest) {
          return size() > CAPACITY;
        }
      };

  SignatureVerdicts(SignaturePool pool) {
    this.pool = pool;
  }

  /** Starts verifying {@code proof} under {@code key} on a helper, when one is free. */
  void prefetchProof(PrincipalProof proof, Ed25519.PublicKey key) {
    prefetch(key, NativeSignatures.proofMessage(proof), proof.getSignature().toByteArray());
  }

  /** {@link NativeSignatures#verifyProof}, using (and forgetting) a prefetched verdict if any. */
  boolean verifyProof(PrincipalProof proof, Ed25519.PublicKey key) {
    return verify(key, NativeSignatures.proofMessage(proof), proof.getSignature().toByteArray());
  }

  /** Starts verifying {@code signed}'s signature under {@code key}, when a helper is free. */
  void prefetchCommand(SignedCommand signed, Ed25519.PublicKey key) {
    prefetch(key, NativeSignatures.commandMessage(signed.getCommand().toByteArray()),
        signed.getSignature().toByteArray());
  }

  /** {@link NativeSignatures#verifyCommand}, using (and forgetting) a prefetched verdict if any. */
  boolean verifyCommand(SignedCommand signed, Ed25519.PublicKey key) {
    return verify(key, NativeSignatures.commandMessage(signed.getCommand().toByteArray()),
        signed.getSignature().toByteArray());
  }

  synchronized int size() {
    return pending.size();
  }

  private void prefetch(Ed25519.PublicKey key, byte[] message, byte[] signature) {
    Optional<RunnableFuture<Boolean>> started =
        pool.tryStart(() -> key.verify(message, signature));
    if (started.isPresent()) {
      ByteBuffer k = key(key, message, signature);
      synchronized (this) {
        pending.put(k, started.get());
      }
    }
  }

  private boolean verify(Ed25519.PublicKey key, byte[] message, byte[] signature) {
    RunnableFuture<Boolean> f;
    synchronized (this) {
      f = pending.remove(key(key, message, signature));
    }
    if (f != null) {
      // A check no helper has started yet (all busy, or not scheduled on a loaded machine) runs
      // here now instead of being waited for; one a helper is running is waited for.
      f.run();
      try {
        return f.get(WAIT_MILLIS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException | TimeoutException e) {
        // Fall through: the caller's own verification decides.
      }
    }
    return key.verify(message, signature);
  }

  private static ByteBuffer key(Ed25519.PublicKey key, byte[] message, byte[] signature) {
    byte[] encoded = key.encoded();
    return ByteBuffer.allocate(encoded.length + message.length + signature.length)
        .put(encoded).put(message).put(signature).flip();
  }
}
