package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.proto.PrincipalProof;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Principal-proof verifications started ahead of the submit that needs them. When a seal
 * completes an upload, the engine already holds the assembled bundle: its proof is verified on a
 * {@link SignaturePool} helper while the seal's outcome is committed and the gateway sends the
 * submit, so the submit's admission check finds the verdict ready instead of computing it.
 *
 * <p>A verdict is the pure function of (public key, proof message, signature), and that triple is
 * the memo's key: a submit checks its proof against the principal's <em>current</em> key, so a
 * rotation between seal and submit simply misses and verifies inline. Nothing here decides
 * anything a sequential verification would not.
 *
 * <p>Threads: {@link #prefetch} and {@link #verify} are called on sending threads inside journal
 * transactions; the verdicts are computed on the pool's helper threads. The map is guarded by
 * {@code this} and holds at most {@link #CAPACITY} entries (the oldest is dropped: a seal whose
 * submit never comes costs one slot until then). The pool belongs to the engine.
 */
final class ProofVerdicts {
  static final int CAPACITY = 256;
  /** A verdict in progress is one Ed25519 verification; past this the caller verifies itself. */
  private static final long WAIT_MILLIS = 1_000;

  private final SignaturePool pool;
  // @GuardedBy("this")
  private final Map<ByteBuffer, Future<Boolean>> pending =
      new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<ByteBuffer, Future<Boolean>> eldest) {
          return size() > CAPACITY;
        }
      };

  ProofVerdicts(SignaturePool pool) {
    this.pool = pool;
  }

  /** Starts verifying {@code proof} under {@code key} on a helper, when one is free. */
  void prefetch(PrincipalProof proof, Ed25519.PublicKey key) {
    byte[] message = NativeSignatures.proofMessage(proof);
    byte[] signature = proof.getSignature().toByteArray();
    Optional<Future<Boolean>> started = pool.tryStart(() -> key.verify(message, signature));
    if (started.isPresent()) {
      ByteBuffer k = key(key, message, signature);
      synchronized (this) {
        pending.put(k, started.get());
      }
    }
  }

  /** {@link NativeSignatures#verifyProof}, using (and forgetting) a prefetched verdict if any. */
  boolean verify(PrincipalProof proof, Ed25519.PublicKey key) {
    byte[] message = NativeSignatures.proofMessage(proof);
    byte[] signature = proof.getSignature().toByteArray();
    Future<Boolean> f;
    synchronized (this) {
      f = pending.remove(key(key, message, signature));
    }
    if (f != null) {
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

  synchronized int size() {
    return pending.size();
  }

  private static ByteBuffer key(Ed25519.PublicKey key, byte[] message, byte[] signature) {
    byte[] encoded = key.encoded();
    return ByteBuffer.allocate(encoded.length + message.length + signature.length)
        .put(encoded).put(message).put(signature).flip();
  }
}
