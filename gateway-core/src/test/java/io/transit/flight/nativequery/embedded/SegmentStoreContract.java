package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link SegmentStore} contract, run against every implementation (subclasses give the
 * store): content addressing, absent-or-complete reads, size checks into a caller's buffer,
 * missing segments, the sweep's stored()/remove(), and a corrupted segment that is handed back
 * as stored (never repaired or hidden) so the reader's digest check fails closed. Every test
 * ends with the allocator empty.
 */
abstract class SegmentStoreContract {
  static final byte[] X = "segment x".getBytes(StandardCharsets.US_ASCII);
  static final byte[] Y = "segment y, a little longer".getBytes(StandardCharsets.US_ASCII);

  SegmentStore store;
  BufferAllocator allocator;

  /** {@code bytes} with one bit changed: the same size, another digest. */
  static byte[] flipped(byte[] bytes) {
    byte[] out = bytes.clone();
    out[3] ^= 0x20;
    return out;
  }

  /** A fresh, empty store for one test. */
  abstract SegmentStore open() throws Exception;

  /** Replaces the stored bytes of {@code sha256} behind the store's back (a damaged disk). */
  abstract void damage(byte[] sha256, byte[] bytes) throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    store = open();
    allocator = new RootAllocator(64L << 20);
  }

  @AfterEach
  void closeStore() {
    store.close();
    assertEquals(0, allocator.getAllocatedMemory(), "every buffer a read returned was freed");
    allocator.close();
  }

  @Test
  void aSegmentIsStoredUnderItsSha256AndReadBackIntoTheCallersBuffer() throws Exception {
    byte[] big = new byte[300_000]; // several of the S3 store's 64 KiB chunks
    new Random(7).nextBytes(big);
    byte[] sha = store.write(big);
    store.sync();
    assertArrayEquals(Digests.sha256(big), sha);
    try (ArrowBuf buf = store.read(sha, big.length, allocator).orElseThrow()) {
      assertEquals(big.length, buf.writerIndex());
      byte[] back = new byte[big.length];
      buf.getBytes(0, back);
      assertArrayEquals(big, back);
    }
    assertArrayEquals(big, store.read(sha, big.length).orElseThrow());
  }

  @Test
  void identicalContentIsOneStoredSegment() throws Exception {
    byte[] first = store.write(X);
    byte[] again = store.write(X);
    store.write(Y);
    store.sync();
    assertArrayEquals(first, again);
    assertEquals(List.of(hex(X), hex(Y)).stream().sorted().toList(), storedHex());
  }

  @Test
  void aMissingSegmentIsEmptyNeverAnError() throws Exception {
    byte[] absent = Digests.sha256("never written".getBytes(StandardCharsets.US_ASCII));
    assertEquals(Optional.empty(), store.read(absent, 13));
    assertEquals(Optional.empty(), store.read(absent, 13, allocator));
  }

  @Test
  void aSegmentOfAnotherSizeThanListedIsWrongSize() throws Exception {
    byte[] sha = store.write(Y);
    assertThrows(SegmentStore.WrongSize.class, () -> store.read(sha, Y.length + 1, allocator));
    assertThrows(SegmentStore.WrongSize.class, () -> store.read(sha, Y.length - 1, allocator));
    // The heap read refuses it too, before its bytes are read.
    assertThrows(SegmentStore.WrongSize.class, () -> store.read(sha, Y.length + 1));
    assertThrows(SegmentStore.WrongSize.class, () -> store.read(sha, Y.length - 1));
    assertArrayEquals(Y, store.read(sha, Y.length).orElseThrow(), "the store still serves it");
  }

  @Test
  void aDamagedSegmentIsHandedBackAsStoredSoItsDigestCheckFails() throws Exception {
    byte[] sha = store.write(Y);
    byte[] flipped = flipped(Y);
    damage(sha, flipped);
    try (ArrowBuf buf = store.read(sha, Y.length, allocator).orElseThrow()) {
      byte[] back = new byte[Y.length];
      buf.getBytes(0, back);
      assertArrayEquals(flipped, back, "the stored bytes, not a cached or repaired copy");
      assertFalse(java.util.Arrays.equals(sha, Digests.sha256(buf, buf.writerIndex())),
          "the reader's SHA-256 check sees the damage");
    }
    damage(sha, X); // shorter: refused by size before any conversion
    assertThrows(SegmentStore.WrongSize.class, () -> store.read(sha, Y.length, allocator));
  }

  @Test
  void theSweepSeesStoredSegmentsAndRemovesEachOnce() throws Exception {
    byte[] x = store.write(X);
    byte[] y = store.write(Y);
    store.sync();
    assertEquals(2, store.stored().size());
    assertTrue(store.remove(x));
    assertFalse(store.remove(x), "already removed");
    assertEquals(List.of(hex(Y)), storedHex());
    assertEquals(Optional.empty(), store.read(x, X.length));
    assertArrayEquals(Y, store.read(y, Y.length).orElseThrow());
  }

  @Test
  void concurrentWritersAndReadersOfTheSameContentAgree() throws Exception {
    byte[] body = new byte[100_000];
    new Random(11).nextBytes(body);
    byte[] sha = store.write(body);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<byte[]>> done = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        boolean writer = i % 2 == 0;
        done.add(pool.submit(() -> {
          if (writer) {
            return store.write(body);
          }
          try (ArrowBuf buf = store.read(sha, body.length, allocator).orElseThrow()) {
            return Digests.sha256(buf, buf.writerIndex());
          }
        }));
      }
      for (Future<byte[]> f : done) {
        assertArrayEquals(sha, f.get(30, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
    assertEquals(List.of(HexFormat.of().formatHex(sha)), storedHex());
  }

  List<String> storedHex() throws Exception {
    return store.stored().stream().map(Digests::hex).sorted().toList();
  }

  static String hex(byte[] content) {
    return Digests.hex(Digests.sha256(content));
  }
}
