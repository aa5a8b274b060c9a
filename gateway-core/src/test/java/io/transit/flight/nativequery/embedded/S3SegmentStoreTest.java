package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Digests;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@link SegmentStore} contract on {@link S3SegmentStore} against a real versitygw on
 * 127.0.0.1 (one per class, a fresh bucket per test), then what only a remote store can do: be
 * unreachable (definite {@link SegmentStore.Unavailable}, bounded by the store's timeouts), come
 * back (the pool's stale connections are replaced and reads resume), refuse to open on a missing
 * bucket or a wrong key, and keep young objects from the sweep.
 */
class S3SegmentStoreTest extends SegmentStoreContract {
  private static final String PREFIX = "segments/";
  private static final AtomicInteger BUCKETS = new AtomicInteger();
  @TempDir static Path dir;
  private static Versitygw gw;
  private String bucket;
  private S3SegmentStore s3;

  @BeforeAll
  static void startServer() throws Exception {
    gw = Versitygw.start(dir);
  }

  @AfterAll
  static void stopServer() throws Exception {
    gw.close();
  }

  @Override
  SegmentStore open() throws Exception {
    bucket = "contract-" + BUCKETS.incrementAndGet();
    gw.createBucket(bucket);
    s3 = S3SegmentStore.open(gw.settings(bucket, PREFIX));
    return s3;
  }

  /** The object's file in versitygw's POSIX root, rewritten in place. */
  @Override
  void damage(byte[] sha256, byte[] bytes) throws Exception {
    Path file = gw.root.resolve(bucket).resolve(s3.key(sha256));
    assertTrue(Files.isRegularFile(file), "the object is a file under the POSIX root: " + file);
    Files.write(file, bytes);
  }

  /** A 4xx the store would answer again is refused for good; an outage's answers are not. */
  @Test
  void aClientErrorOtherThanTimeoutConflictOrThrottlingIsRefusedForGood() {
    for (int status : new int[] {400, 401, 403, 405, 411, 412, 413}) {
      assertTrue(S3SegmentStore.refusedForGood(status, null), "status " + status);
    }
    assertTrue(S3SegmentStore.refusedForGood(403, "AccessDenied"));
    assertTrue(S3SegmentStore.refusedForGood(403, "SignatureDoesNotMatch"));
    // A server that does not implement the request would answer every rerun the same.
    assertTrue(S3SegmentStore.refusedForGood(501, "NotImplemented"));
    assertTrue(S3SegmentStore.refusedForGood(505, null));
    for (int status : new int[] {200, 404, 408, 409, 429, 499, 500, 502, 503, 504, 507}) {
      assertFalse(S3SegmentStore.refusedForGood(status, null), "status " + status);
    }
    // Until 2026-12-06 these failed the statement for good: a stalled upload, a skewed clock, a
    // body damaged or cut on its way (the next PUT sends it again).
    for (String passing : List.of("RequestTimeout", "BadDigest", "IncompleteBody",
        "XAmzContentSHA256Mismatch")) {
      assertFalse(S3SegmentStore.refusedForGood(400, passing), passing);
    }
    assertFalse(S3SegmentStore.refusedForGood(403, "RequestTimeTooSkewed"));
  }

  @Test
  void aReadFromABucketThatIsGoneIsUnavailableNotALostSegment() throws Exception {
    byte[] x = store.write(X);
    Path bucketDir = gw.root.resolve(bucket);
    Path aside = gw.root.resolve(bucket + "-aside");
    Files.move(bucketDir, aside);
    try {
      SegmentStore.Unavailable r = assertThrows(SegmentStore.Unavailable.class,
          () -> store.read(x, X.length, allocator));
      assertEquals("NoSuchBucket", r.reason);
      assertThrows(SegmentStore.Unavailable.class, () -> store.read(x, X.length));
    } finally {
      Files.move(aside, bucketDir);
    }
    assertArrayEquals(X, store.read(x, X.length).orElseThrow());
    // An absent object in a present bucket is still absent (the reader's evidence of a loss).
    assertTrue(store.read(new byte[32], 1).isEmpty());
  }

  @Test
  void keysAreThePrefixAndTheSha256Hex() throws Exception {
    byte[] sha = store.write(X);
    assertTrue(Files.isRegularFile(gw.root.resolve(bucket).resolve("segments/" + Digests.hex(sha))));
  }

  @Test
  void aStoppedServerFailsEveryCallDefinitelyAndReadsResumeAfterItsRestart() throws Exception {
    byte[] x = store.write(X);
    try (ArrowBuf buf = store.read(x, X.length, allocator).orElseThrow()) {
      assertEquals(X.length, buf.writerIndex()); // a pooled keep-alive connection now exists
    }
    gw.stop();
    try {
      long start = System.nanoTime();
      SegmentStore.Unavailable w = assertThrows(SegmentStore.Unavailable.class,
          () -> store.write(Y));
      assertEquals("connect", w.reason);
      SegmentStore.Unavailable r = assertThrows(SegmentStore.Unavailable.class,
          () -> store.read(x, X.length, allocator));
      assertEquals("connect", r.reason);
      assertThrows(SegmentStore.Unavailable.class, () -> store.read(x, X.length));
      assertThrows(SegmentStore.Unavailable.class, () -> store.stored());
      assertThrows(SegmentStore.Unavailable.class, () -> store.remove(x));
      // Five calls, each bounded by the 5 s request timeout (with its retries).
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(25).toNanos());
    } finally {
      gw.restart();
    }
    // The same store object: its pooled connection to the old process is stale.
    try (ArrowBuf buf = store.read(x, X.length, allocator).orElseThrow()) {
      byte[] back = new byte[X.length];
      buf.getBytes(0, back);
      assertArrayEquals(X, back);
    }
    byte[] y = store.write(Y);
    assertArrayEquals(Y, store.read(y, Y.length).orElseThrow());
    assertEquals(2, store.stored().size());
  }

  @Test
  void aServerThatNeverAnswersIsATimeoutNotAHang() throws Exception {
    // A listening socket that never accepts the HTTP exchange: connects, then silence.
    try (ServerSocket silent = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      SegmentSettings.ObjectStore s = gw.settings(bucket, PREFIX);
      SegmentSettings.ObjectStore mute = new SegmentSettings.ObjectStore(
          URI.create("http://127.0.0.1:" + silent.getLocalPort()), s.region(), s.bucket(),
          s.prefix(), s.accessKeyId(), s.secretAccessKey(), Duration.ofSeconds(1),
          Duration.ofSeconds(2), 2, Duration.ZERO);
      long start = System.nanoTime();
      IOException e = assertThrows(IOException.class, () -> S3SegmentStore.open(mute));
      assertTrue(e.getMessage().contains("(timeout)"), e.getMessage());
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(10).toNanos());
    }
  }

  /**
   * A store that answers a GET's headers and then sends its body a byte now and then: each gap
   * is under the socket timeout, so only the body's own deadline ends the read.
   */
  @Test
  void aBodyThatTricklesIsCutAtTheRequestTimeout() throws Exception {
    try (ServerSocket trickle = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      Thread server = new Thread(() -> serveTrickling(trickle), "trickling-s3");
      server.setDaemon(true);
      server.start();
      SegmentSettings.ObjectStore s = gw.settings(bucket, PREFIX);
      SegmentSettings.ObjectStore slow = new SegmentSettings.ObjectStore(
          URI.create("http://127.0.0.1:" + trickle.getLocalPort()), s.region(), s.bucket(),
          s.prefix(), s.accessKeyId(), s.secretAccessKey(), Duration.ofSeconds(1),
          Duration.ofSeconds(1), 2, Duration.ZERO);
      try (S3SegmentStore store = S3SegmentStore.open(slow)) {
        long start = System.nanoTime();
        SegmentStore.Unavailable e = assertThrows(SegmentStore.Unavailable.class,
            () -> store.read(new byte[32], 1000, allocator));
        assertEquals("timeout", e.reason);
        SegmentStore.Unavailable heap = assertThrows(SegmentStore.Unavailable.class,
            () -> store.read(new byte[32], 1000));
        assertEquals("timeout", heap.reason);
        // Two reads, each cut a second after its headers (the trickle would take 250 s).
        assertTrue(System.nanoTime() - start < Duration.ofSeconds(10).toNanos());
      }
    }
  }

  /** Answers HEAD with 200 and GET with 1000 promised bytes, one every 250 ms. */
  private static void serveTrickling(ServerSocket server) {
    while (!server.isClosed()) {
      java.net.Socket c;
      try {
        c = server.accept();
      } catch (IOException closed) {
        return;
      }
      Thread t = new Thread(() -> {
        try (c) {
          var in = new java.io.BufferedReader(new java.io.InputStreamReader(
              c.getInputStream(), java.nio.charset.StandardCharsets.US_ASCII));
          var out = c.getOutputStream();
          for (String line = in.readLine(); line != null; line = in.readLine()) {
            boolean get = line.startsWith("GET ");
            for (String h = in.readLine(); h != null && !h.isEmpty(); h = in.readLine()) {
              // the request's headers: nothing in them matters here
            }
            if (!get) {
              out.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                  .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
              out.flush();
              continue;
            }
            out.write(("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            for (int i = 0; i < 1000; i++) {
              out.write(0);
              out.flush();
              Thread.sleep(250);
            }
          }
        } catch (IOException | InterruptedException e) {
          // the client cut the read: what this test expects
        }
      }, "trickling-s3-connection");
      t.setDaemon(true);
      t.start();
    }
  }

  @Test
  void openRefusesAMissingBucketAWrongKeyAndNoServer() throws Exception {
    SegmentSettings.ObjectStore s = gw.settings(bucket, PREFIX);
    IOException missing = assertThrows(IOException.class, () -> S3SegmentStore.open(
        gw.settings("no-such-bucket", PREFIX)));
    assertTrue(missing.getMessage().contains("no-such-bucket"), missing.getMessage());
    SegmentSettings.ObjectStore wrongKey = new SegmentSettings.ObjectStore(s.endpoint(),
        s.region(), s.bucket(), s.prefix(), s.accessKeyId(), "not-the-secret",
        s.connectTimeout(), s.requestTimeout(), 2, Duration.ZERO);
    IOException denied = assertThrows(IOException.class, () -> S3SegmentStore.open(wrongKey));
    assertTrue(denied.getMessage().contains("HTTP 403"), denied.getMessage());
    int free;
    try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      free = probe.getLocalPort();
    }
    SegmentSettings.ObjectStore nobody = new SegmentSettings.ObjectStore(
        URI.create("http://127.0.0.1:" + free), s.region(), s.bucket(), s.prefix(),
        s.accessKeyId(), s.secretAccessKey(), s.connectTimeout(), s.requestTimeout(), 2,
        Duration.ZERO);
    IOException refused = assertThrows(IOException.class, () -> S3SegmentStore.open(nobody));
    assertTrue(refused.getMessage().contains("(connect)"), refused.getMessage());
    assertTrue(!s.toString().contains(s.secretAccessKey()), "settings never print the secret");
  }

  @Test
  void theSweepLeavesObjectsYoungerThanItsMinimumAge() throws Exception {
    SegmentSettings.ObjectStore s = gw.settings(bucket, PREFIX);
    try (S3SegmentStore guarded = S3SegmentStore.open(new SegmentSettings.ObjectStore(
        s.endpoint(), s.region(), s.bucket(), s.prefix(), s.accessKeyId(), s.secretAccessKey(),
        s.connectTimeout(), s.requestTimeout(), 2, Duration.ofHours(1)))) {
      byte[] x = guarded.write(X);
      assertEquals(List.of(), guarded.stored(), "another replica may be about to name it");
      assertEquals(List.of(hex(X)), storedHex(), "a store without the guard sees it");
      assertEquals(Optional.of(X.length), guarded.read(x, X.length).map(b -> b.length));
    }
  }

  @Test
  void anObjectRewrittenAfterTheSweepListedItIsNotRemoved() throws Exception {
    SegmentSettings.ObjectStore s = gw.settings(bucket, PREFIX);
    // Object times have whole-second resolution (truncated), so an object written just before a
    // second's end reads up to a second older than it is: with a 1 s minimum age a refreshed
    // object could already count as old. 2 s leaves that second out of the margin.
    Duration minAge = Duration.ofSeconds(2);
    try (S3SegmentStore sweeper = S3SegmentStore.open(new SegmentSettings.ObjectStore(
            s.endpoint(), s.region(), s.bucket(), s.prefix(), s.accessKeyId(),
            s.secretAccessKey(), s.connectTimeout(), s.requestTimeout(), 2, minAge));
        S3SegmentStore replica = S3SegmentStore.open(new SegmentSettings.ObjectStore(
            s.endpoint(), s.region(), s.bucket(), s.prefix(), s.accessKeyId(),
            s.secretAccessKey(), s.connectTimeout(), s.requestTimeout(), 2, minAge))) {
      byte[] x = replica.write(X);
      Thread.sleep(minAge.toMillis() + 1_200); // past the minimum age, truncation included
      assertEquals(List.of(hex(X)), sweeper.stored().stream().map(Digests::hex).toList());
      // Another replica finds the old object for a manifest it is about to commit: it writes it
      // again, after the sweep listed it and before the sweep removes it.
      replica.write(X);
      assertFalse(sweeper.remove(x), "a refreshed object is young again");
      assertEquals(Optional.of(X.length), replica.read(x, X.length).map(b -> b.length));
    }
  }

  @Test
  void otherKeysUnderThePrefixAreNotSegments() throws Exception {
    store.write(X);
    Files.writeString(gw.root.resolve(bucket).resolve("segments/notes.txt"), "not a segment");
    assertEquals(List.of(hex(X)), storedHex());
  }
}
