package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import io.transit.flight.threads.DeadlineTimer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * A {@link SegmentStore} in an S3-API bucket: one immutable object per segment, named {@code
 * <prefix><sha256 hex>}, so identical content is one object and a key always names the same bytes.
 * The manifest and its digest stay in the journal; the SHA-256 of every segment is checked by the
 * reader before conversion, as for local files ({@code server.sql.Coverage.checkBytes}), and a
 * wrong size is refused here ({@link WrongSize}).
 *
 * <p><b>Threads.</b> Every method except {@link #close} may be called from any thread at once; the
 * class keeps no mutable state of its own (all fields are final and immutable, the {@link S3Client}
 * is thread-safe). Who calls what:
 *
 * <ul>
 *   <li>{@link #write} — the engine's execution threads ({@code native-exec-N}), one query each,
 *       while holding the retention sweep's writing lock;
 *   <li>{@link #read(byte[], long, BufferAllocator)} — DoGet producers (T_caller) through {@code
 *       ResultReader}; {@link #read(byte[], long)} — the heap read of the same path;
 *   <li>{@link #stored} — the single {@code native-retention} thread, holding nothing; {@link
 *       #remove} — the same thread, holding the writing lock's exclusive side (no local query is
 *       between segment write and manifest commit);
 *   <li>the body deadline's abort — the store's own timer thread {@code
 *       segments-read-deadlines}: {@code abort()} on a GET's stream still being read by its
 *       caller, which then fails that read (the SDK's abort is made to be called from another
 *       thread); cancelled by the caller once the body is read;
 *   <li>{@link #sync} — execution threads; a no-op (see there);
 *   <li>{@link #close} — the engine's closing thread, once, after the execution pool and the
 *       sweep have stopped, so no call is in flight.
 * </ul>
 *
 * <p><b>The HTTP connection pool</b> (Apache HttpClient 5, {@code maxConnections} entries) is the
 * one structure those threads share, inside the SDK. What touches a pool entry, and when:
 *
 * <ul>
 *   <li>Lease (any calling thread): each S3 call leases one connection for its request and
 *       response, waiting at most {@code requestTimeout} for a free one when all are leased.
 *   <li>Return (the same calling thread): HEAD, PUT, DELETE and LIST return their connection when
 *       the SDK has read the response. A GET keeps its lease while its body is streamed: {@link
 *       #read} reads the body to its end on the calling thread and then closes the stream (a
 *       failure to close after the whole body is ignored: the bytes are read, and the buffer they
 *       are in already has its owner); a read that stops early (wrong size, a failure) calls
 *       {@code abort()} first, so a connection with unread body bytes is discarded, never handed
 *       to the next lease. Both reads check the object's length before reading its body, and
 *       cancel the body's deadline before the close: a deadline abort that already started drops
 *       the connection instead of reaching the next lease's.
 *   <li>Eviction (the SDK's idle-connection reaper thread): closes entries idle longer than the
 *       pool's idle limit; it takes only idle entries under the pool's lock, so it cannot race a
 *       leased one. A connection the server closed meanwhile (a restart) fails its next request
 *       with an I/O error, which the SDK's retry strategy repeats on a fresh connection.
 *   <li>Shutdown ({@link #close}, one thread): closes every entry; nothing is leased then.
 * </ul>
 *
 * <p>Lease and return are always by the same thread, inside one method of this class, so no
 * connection outlives the call that leased it, and no lock of this class is held across network
 * I/O (there is none). Who waits on whom: a caller waits only on the pool (bounded by {@code
 * requestTimeout}) and on the server (connect bounded by {@code connectTimeout}, the whole call
 * with retries by {@code requestTimeout}, a GET's body by {@code requestTimeout} more from its
 * headers); nothing here waits on another caller.
 *
 * <p><b>Buffers.</b> {@link #write} never keeps {@code bytes} after it returns (the request body
 * streams from the caller's array). {@link #read(byte[], long, BufferAllocator)} allocates the
 * returned {@link ArrowBuf} from the caller's allocator and streams the response body into it in
 * 64 KiB chunks through one staging array of its own (never the whole object on the heap); on any
 * failure it frees that buffer itself, on success ownership passes to the caller.
 *
 * <p><b>Failures</b> are definite: a missing object is empty (the reader's EVIDENCE or RETIRED); a
 * wrong size is {@link WrongSize}; a refused connection, a timeout, an interrupted call or a server
 * error is {@link Unavailable} (a read's UNAVAILABLE {@code query.segment_store_unavailable}, a
 * write's rerun: {@link SegmentStore}), never a partial or empty answer.
 */
final class S3SegmentStore implements SegmentStore {
  private static final int CHUNK = 64 * 1024;

  private final S3Client client;
  private final String bucket;
  /** The bound of one whole call, a GET's body included (see {@link #bodyDeadline}). */
  private final Duration requestTimeout;
  /**
   * Aborts a GET whose body is still streaming at its deadline: the SDK's call timeout ends when
   * the response's headers arrive, and the socket timeout bounds only each gap between bytes, so
   * a store sending a byte now and then would hold a reader and a pooled connection for hours.
   * A timer of its own, not the daemon's: {@code abort()} calls into the HTTP client (it closes
   * the connection), more than the hand-off allowed on the daemon's timer, and a slow one holds
   * back only this store's other body deadlines, never a stream's or a compilation's.
   */
  private final ScheduledExecutorService deadlines;
  /** Bound of {@link #reachable}: short, a waiting caller asks it. */
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(1);
  private final String prefix;
  // Objects younger than this are left by stored(): another replica may be about to name them.
  private final Duration sweepMinAge;

  private S3SegmentStore(S3Client client, String bucket, String prefix, Duration sweepMinAge,
      Duration requestTimeout) {
    this.client = client;
    this.bucket = bucket;
    this.requestTimeout = requestTimeout;
    this.deadlines = DeadlineTimer.create("segments-read-deadlines");
    this.prefix = prefix;
    this.sweepMinAge = sweepMinAge;
  }

  /**
   * Connects to the bucket of {@code s}. The bucket must exist: a missing one, a refused
   * credential or an unreachable server is an {@link IOException} naming the bucket, so a
   * misconfigured gateway does not start.
   */
  static S3SegmentStore open(SegmentSettings.ObjectStore s) throws IOException {
    S3Client client = S3Client.builder()
        .endpointOverride(s.endpoint())
        .region(Region.of(s.region()))
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create(s.accessKeyId(), s.secretAccessKey())))
        // Non-AWS servers (versitygw) address buckets by path, not by host name.
        .forcePathStyle(true)
        // Since 2.30 the SDK adds CRC32 trailers by default, which third-party servers refuse;
        // integrity of the body is Content-MD5 on PUT and the SHA-256 check on read instead.
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .httpClientBuilder(Apache5HttpClient.builder()
            .maxConnections(s.maxConnections())
            .connectionTimeout(s.connectTimeout())
            .socketTimeout(s.requestTimeout())
            .connectionAcquisitionTimeout(s.requestTimeout()))
        .overrideConfiguration(c -> c.apiCallTimeout(s.requestTimeout()))
        .build();
    S3SegmentStore store = new S3SegmentStore(client, s.bucket(), s.prefix(), s.sweepMinAge(),
        s.requestTimeout());
    try {
      client.headBucket(b -> b.bucket(s.bucket()));
      return store;
    } catch (S3Exception e) {
      store.close();
      throw new IOException("segments: bucket " + s.bucket() + " at " + s.endpoint()
          + " cannot be used (HTTP " + e.statusCode() + ")", e);
    } catch (SdkException e) {
      store.close();
      throw new IOException("segments: the object store at " + s.endpoint()
          + " cannot be reached (" + reason(e) + ")", e);
    }
  }

  @Override
  public byte[] write(byte[] bytes) throws IOException {
    byte[] sha = Digests.sha256(bytes);
    String key = key(sha);
    Optional<HeadObjectResponse> head = writing(() -> head(key));
    if (head.isPresent() && Long.valueOf(bytes.length).equals(head.get().contentLength())
        && !needsRefresh(head.get().lastModified())) {
      return sha; // the same key always names the same bytes
    }
    // Absent (or an old object a replica's sweep may soon take, or a damaged one of the wrong
    // size): PUT the bytes. Overwriting identical content changes nothing a reader can see, and a
    // PUT is atomic, so the key is absent-or-complete throughout.
    try {
      client.putObject(b -> b.bucket(bucket).key(key).contentLength((long) bytes.length)
              .contentMD5(md5(bytes)),
          RequestBody.fromContentProvider(() -> new ByteArrayInputStream(bytes), bytes.length,
              "application/octet-stream"));
    } catch (S3Exception e) {
      if (e.statusCode() == 507) {
        // The server's storage is full; how much it has left is not said.
        throw new DiskFull(0, bytes.length, e);
      }
      if (refusedForGood(e.statusCode(), errorCode(e))) {
        throw new Refused(reason(e), e);
      }
      throw unavailable(e);
    } catch (SdkException e) {
      throw unavailable(e);
    }
    return sha;
  }

  /**
   * A write's HEAD: a client error the store would answer again is {@link Refused}, anything
   * else {@link Unavailable}.
   */
  private static <T> T writing(Supplier<T> s) throws Refused, Unavailable {
    try {
      return s.get();
    } catch (S3Exception e) {
      if (refusedForGood(e.statusCode(), errorCode(e))) {
        throw new Refused(reason(e), e);
      }
      throw unavailable(e);
    } catch (SdkException e) {
      throw unavailable(e);
    }
  }

  /**
   * S3's codes for a 4xx that a later request need not meet: an upload the server gave up
   * reading in time (400, a stalled sender), a request signed by a clock out of step (403, until
   * the host's clock is corrected), and a body that arrived damaged or short (400 {@code
   * BadDigest}, {@code IncompleteBody}, {@code XAmzContentSHA256Mismatch}: the next PUT sends it
   * again). Failing the statement for them would spend its sequence for a passing condition.
   */
  private static final Set<String> PASSING_CLIENT_ERRORS = Set.of("RequestTimeout",
      "RequestTimeTooSkewed", "BadDigest", "IncompleteBody", "XAmzContentSHA256Mismatch");

  /**
   * An answer the same request would meet again. A 4xx, unless a timeout (408, or 400 {@code
   * RequestTimeout}), a passing condition ({@link #PASSING_CLIENT_ERRORS}), a conflict with a
   * concurrent request (409), throttling (429) or a closed request (499): access denied (403), an
   * invalid request (400) and the like mean the deployment's store or credentials are wrong, and
   * a query rerun for them would never finish. Of the 5xx, a server that does not implement what
   * is asked (501) or the protocol version (505): an outage's 500, 502, 503 and 504 pass.
   * {@code code}: S3's error code, null when the answer had none.
   */
  static boolean refusedForGood(int status, String code) {
    if (status == 501 || status == 505) {
      return true;
    }
    return status >= 400 && status < 500 && status != 404 && status != 408 && status != 409
        && status != 429 && status != 499
        && (code == null || !PASSING_CLIENT_ERRORS.contains(code));
  }

  /** S3's error code of {@code e} (e.g. {@code NoSuchKey}), or null. */
  private static String errorCode(S3Exception e) {
    return e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
  }

  /**
   * A PUT returns 200 only once the object is stored durably (the S3 API's contract), so every
   * segment written so far is already durable: there is nothing to flush.
   */
  @Override
  public void sync() {}

  /** One HeadBucket bounded by {@link #PROBE_TIMEOUT}, the SDK's retries included. */
  @Override
  public boolean reachable() {
    try {
      client.headBucket(b -> b.bucket(bucket)
          .overrideConfiguration(o -> o.apiCallTimeout(PROBE_TIMEOUT)));
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  @Override
  public Optional<byte[]> read(byte[] sha256, long expectedBytes) throws IOException {
    ResponseInputStream<GetObjectResponse> in = get(key(sha256));
    if (in == null) {
      return Optional.empty();
    }
    Long length = in.response().contentLength();
    if (length == null || length != expectedBytes || expectedBytes > Integer.MAX_VALUE) {
      discard(in); // an object of another size is never read onto the heap
      throw new WrongSize();
    }
    byte[] bytes;
    BodyDeadline deadline = bodyDeadline(in);
    try {
      bytes = in.readNBytes((int) expectedBytes);
      if (bytes.length != expectedBytes || in.read() >= 0) {
        throw new WrongSize();
      }
    } catch (IOException | SdkException e) {
      deadline.cancel();
      discard(in);
      throw e instanceof WrongSize w ? w : deadline.unavailable(e);
    }
    giveBack(in, deadline);
    return Optional.of(bytes);
  }

  /** A GET's body deadline: {@code requestTimeout} from when its headers arrived. */
  private BodyDeadline bodyDeadline(ResponseInputStream<GetObjectResponse> in) {
    AtomicBoolean fired = new AtomicBoolean();
    ScheduledFuture<?> task = deadlines.schedule(() -> {
      fired.set(true);
      in.abort(); // the reading thread's next read fails; its connection is dropped
    }, requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
    return new BodyDeadline(task, fired);
  }

  /** The abort scheduled for one GET's body, and whether it fired. */
  private record BodyDeadline(ScheduledFuture<?> task, AtomicBoolean fired) {
    /** True when its abort will never run; false when it ran or is running. */
    boolean cancel() {
      return task.cancel(false);
    }

    /** {@code e}, a failure reading the body, as the store's answer. */
    Unavailable unavailable(Throwable e) {
      return fired.get() ? new Unavailable("timeout", e) : S3SegmentStore.unavailable(e);
    }
  }

  @Override
  public Optional<ArrowBuf> read(byte[] sha256, long expectedBytes, BufferAllocator allocator)
      throws IOException {
    ResponseInputStream<GetObjectResponse> in = get(key(sha256));
    if (in == null) {
      return Optional.empty();
    }
    Long length = in.response().contentLength();
    if (length == null || length != expectedBytes || expectedBytes > Integer.MAX_VALUE) {
      discard(in);
      throw new WrongSize();
    }
    ArrowBuf buf;
    try {
      buf = allocator.buffer(expectedBytes);
    } catch (RuntimeException | Error e) {
      // Refused by the allocator's limit: the body is not read to its end on this thread.
      discard(in);
      throw e;
    }
    BodyDeadline deadline = bodyDeadline(in);
    try {
      fill(in, buf, expectedBytes);
      buf.writerIndex(expectedBytes);
    } catch (IOException | RuntimeException e) {
      deadline.cancel();
      buf.close();
      discard(in);
      if (e instanceof WrongSize || !(e instanceof IOException || e instanceof SdkException)) {
        throw e;
      }
      throw deadline.unavailable(e); // the connection broke or timed out mid-body
    }
    giveBack(in, deadline);
    return Optional.of(buf);
  }

  /**
   * A body read whole: its connection goes back to the pool once its deadline can no longer
   * abort it. A deadline that fired, or is firing, after the last byte may abort whatever leases
   * that connection next, so the connection is dropped instead. A failure to give it back changes
   * nothing read (the bytes already have their owner), so it is not thrown.
   */
  private static void giveBack(ResponseInputStream<GetObjectResponse> in, BodyDeadline deadline) {
    if (deadline.cancel()) {
      closeQuietly(in);
    } else {
      discard(in);
    }
  }

  /** A body not read to its end: its connection is dropped, never leased again. */
  private static void discard(ResponseInputStream<GetObjectResponse> in) {
    in.abort();
    closeQuietly(in);
  }

  private static void closeQuietly(ResponseInputStream<GetObjectResponse> in) {
    try {
      in.close();
    } catch (IOException | RuntimeException ignored) {
      // Nothing more is read from it; the pool replaces a connection it cannot reuse.
    }
  }

  /** Streams exactly {@code length} bytes into {@code buf}; more or fewer is {@link WrongSize}. */
  private static void fill(InputStream in, ArrowBuf buf, long length) throws IOException {
    byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(1, length))];
    long at = 0;
    while (at < length) {
      int n = in.read(chunk, 0, (int) Math.min(chunk.length, length - at));
      if (n < 0) {
        throw new WrongSize();
      }
      buf.setBytes(at, chunk, 0, n);
      at += n;
    }
    if (in.read() >= 0) {
      throw new WrongSize();
    }
  }

  @Override
  public List<byte[]> stored() throws IOException {
    Instant youngest = Instant.now().minus(sweepMinAge);
    return call(() -> {
      List<byte[]> out = new ArrayList<>();
      for (ListObjectsV2Response page
          : client.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix))) {
        for (S3Object o : page.contents()) {
          String name = o.key().substring(prefix.length());
          // Only segment names; anything else under the prefix is not ours to remove.
          if (name.length() == 64 && name.chars().allMatch(c -> Character.digit(c, 16) >= 0)
              && o.lastModified() != null && !o.lastModified().isAfter(youngest)) {
            out.add(HexFormat.of().parseHex(name));
          }
        }
      }
      return out;
    });
  }

  @Override
  public boolean remove(byte[] sha256) throws IOException {
    String key = key(sha256);
    // DeleteObject answers the same for an absent key, so ask first: the sweep counts removals.
    // Ask for its age again too: another replica that found this object old re-PUT it for a
    // manifest it is about to commit (write's refresh) after this sweep listed it. Only the
    // HEAD-to-DELETE round trip remains open to that race (docs/deployment.md).
    Optional<HeadObjectResponse> head = call(() -> head(key));
    if (head.isEmpty() || tooYoungToRemove(head.get().lastModified())) {
      return false;
    }
    call(() -> client.deleteObject(b -> b.bucket(bucket).key(key)));
    return true;
  }

  @Override
  public void close() {
    deadlines.shutdownNow();
    client.close();
  }

  String key(byte[] sha256) {
    return prefix + Digests.hex(sha256);
  }

  private boolean tooYoungToRemove(Instant lastModified) {
    return lastModified == null || lastModified.isAfter(Instant.now().minus(sweepMinAge));
  }

  /** An object written more than half the sweep's minimum age ago is written again. */
  private boolean needsRefresh(Instant lastModified) {
    return !sweepMinAge.isZero() && lastModified != null
        && lastModified.isBefore(Instant.now().minus(sweepMinAge.dividedBy(2)));
  }

  private Optional<HeadObjectResponse> head(String key) {
    try {
      return Optional.of(client.headObject(b -> b.bucket(bucket).key(key)));
    } catch (S3Exception e) {
      if (e.statusCode() == 404) {
        return Optional.empty();
      }
      throw e;
    }
  }

  /** The object's body stream (its connection leased until closed), or null when absent. */
  private ResponseInputStream<GetObjectResponse> get(String key) throws IOException {
    try {
      return client.getObject(b -> b.bucket(bucket).key(key));
    } catch (S3Exception e) {
      // A missing bucket (renamed, not mounted yet) says nothing of the object: the store cannot
      // answer, which is not the evidence of a lost segment that an absent object is.
      if (e.statusCode() == 404 && !"NoSuchBucket".equals(errorCode(e))) {
        return null;
      }
      throw unavailable(e);
    } catch (SdkException e) {
      throw unavailable(e);
    }
  }

  private static <T> T call(Supplier<T> s) throws Unavailable {
    try {
      return s.get();
    } catch (SdkException e) {
      throw unavailable(e);
    }
  }

  private static Unavailable unavailable(Throwable e) {
    return new Unavailable(reason(e), e);
  }

  /** A short token for what went wrong: never the server's text, which may be anything. */
  static String reason(Throwable e) {
    if (e instanceof S3Exception s) {
      String code = s.awsErrorDetails() == null ? null : s.awsErrorDetails().errorCode();
      if (code != null && code.matches("[A-Za-z0-9]{1,40}")) {
        return code;
      }
      return "http_" + s.statusCode();
    }
    if (e instanceof ApiCallTimeoutException || e instanceof ApiCallAttemptTimeoutException) {
      return "timeout";
    }
    if (e instanceof AbortedException) {
      return "interrupted";
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return "connect";
      }
      if (t instanceof SocketTimeoutException) {
        return "timeout";
      }
      if (t instanceof InterruptedIOException) {
        return "interrupted";
      }
    }
    return "io";
  }

  private static String md5(byte[] bytes) {
    try {
      return Base64.getEncoder().encodeToString(MessageDigest.getInstance("MD5").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has MD5", e);
    }
  }
}
