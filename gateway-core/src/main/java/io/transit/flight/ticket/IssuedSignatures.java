package io.transit.flight.ticket;

import io.transit.flight.crypto.Ed25519;
import java.util.Arrays;

/**
 * The last {@code capacity} (signed digest, signature) pairs a {@link TicketService} issued, the
 * oldest overwritten first, in arrays allocated once.
 *
 * <p>Why flat arrays: a pair lives for about a thousand statements, long enough to survive every
 * young collection until it is tenured. As objects (a map entry, a key, two arrays: about 220 B
 * a ticket) the remembered pairs were the daemon's young survivors, copied by each collection
 * some fifteen times, and the serial collector's pause grew by 0.2–0.4 ms (median 0.98 ms
 * without them, 1.16–1.37 ms with them, bench runs of 2026-12-04). Here remembering a pair
 * writes bytes into arrays that were tenured long ago and allocates nothing.
 *
 * <p>A look-up compares the digest's first eight bytes against the slots in use, newest first,
 * and the whole pair only where those match; the signature is compared in constant time. A DoGet
 * presents the ticket its GetFlightInfo was issued moments before, so it is usually found within
 * a few slots; a miss scans all of them, well under a microsecond for 1,024, against the 0.15 ms
 * of the curve check that follows.
 *
 * <p>Threads: {@link #remember} and {@link #contains} may be called from any thread (gRPC handler
 * threads issuing and verifying tickets); every field below is guarded by {@code this}. The
 * arrays passed in are read, never kept.
 */
final class IssuedSignatures {
  private static final int DIGEST_BYTES = 32;
  private static final int SIGNATURE_BYTES = Ed25519.SIGNATURE_BYTES;

  private final int capacity;
  // @GuardedBy("this"): each slot's digest prefix, digest and signature.
  private final long[] prefixes;
  private final byte[] digests;
  private final byte[] signatures;
  // @GuardedBy("this"): the slot the next pair is written to, and how many slots are in use.
  private int next;
  private int used;

  IssuedSignatures(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity: " + capacity + " (expected: >= 1)");
    }
    this.capacity = capacity;
    this.prefixes = new long[capacity];
    this.digests = new byte[capacity * DIGEST_BYTES];
    this.signatures = new byte[capacity * SIGNATURE_BYTES];
  }

  /** Remembers that {@code signature} was computed over {@code digest}; forgets the oldest. */
  synchronized void remember(byte[] digest, byte[] signature) {
    checkLengths(digest, signature);
    int slot = next;
    prefixes[slot] = prefix(digest);
    System.arraycopy(digest, 0, digests, slot * DIGEST_BYTES, DIGEST_BYTES);
    System.arraycopy(signature, 0, signatures, slot * SIGNATURE_BYTES, SIGNATURE_BYTES);
    next = (slot + 1) % capacity;
    used = Math.min(capacity, used + 1);
  }

  /** Whether exactly this pair is among those remembered; false for any other length. */
  synchronized boolean contains(byte[] digest, byte[] signature) {
    if (digest.length != DIGEST_BYTES || signature.length != SIGNATURE_BYTES) {
      return false;
    }
    long prefix = prefix(digest);
    for (int i = 1, slot = next; i <= used; i++) {
      slot = slot == 0 ? capacity - 1 : slot - 1;
      if (prefixes[slot] == prefix
          && Arrays.equals(digests, slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES,
              digest, 0, DIGEST_BYTES)
          && signatureEquals(slot, signature)) {
        return true;
      }
    }
    return false;
  }

  /** Constant time in the signature's bytes: a presented ticket learns nothing from timing. */
  private boolean signatureEquals(int slot, byte[] signature) {
    int offset = slot * SIGNATURE_BYTES;
    int diff = 0;
    for (int i = 0; i < SIGNATURE_BYTES; i++) {
      diff |= signatures[offset + i] ^ signature[i];
    }
    return diff == 0;
  }

  private static long prefix(byte[] digest) {
    long p = 0;
    for (int i = 0; i < Long.BYTES; i++) {
      p = (p << 8) | (digest[i] & 0xff);
    }
    return p;
  }

  private static void checkLengths(byte[] digest, byte[] signature) {
    if (digest.length != DIGEST_BYTES || signature.length != SIGNATURE_BYTES) {
      throw new IllegalArgumentException("a pair is a " + DIGEST_BYTES + "-byte digest and a "
          + SIGNATURE_BYTES + "-byte signature, not " + digest.length + " and "
          + signature.length);
    }
  }
}
