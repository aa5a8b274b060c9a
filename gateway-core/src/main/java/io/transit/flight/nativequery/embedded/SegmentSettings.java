package io.transit.flight.nativequery.embedded;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * Where the engine keeps retained segments: {@link Local} (the state directory's {@code
 * engine/segments}, the default) or {@link ObjectStore} (an S3-API bucket, see {@link
 * S3SegmentStore}). Immutable values; the engine builds its store from them once, at open.
 */
public sealed interface SegmentSettings permits SegmentSettings.Local, SegmentSettings.ObjectStore {

  /** The default: content-addressed files under the engine's state directory. */
  static SegmentSettings local() {
    return new Local();
  }

  /** Files in {@code <state_dir>/engine/segments} ({@link LocalSegmentStore}). */
  record Local() implements SegmentSettings {}

  /**
   * An S3-API bucket reached over HTTP(S) with path-style addressing (what non-AWS servers
   * expect), objects named {@code <prefix><sha256 hex>}.
   *
   * @param endpoint the server's base URI ({@code http://127.0.0.1:7070}, {@code https://…})
   * @param region the SigV4 signing region (any name a non-AWS server accepts)
   * @param bucket an existing bucket; the engine does not create it
   * @param prefix prepended to every key (for example {@code segments/})
   * @param accessKeyId the access key, read from its 0600 file at start
   * @param secretAccessKey the secret key, read from its 0600 file at start; never printed
   * @param connectTimeout bound of one TCP (and TLS) connect
   * @param requestTimeout bound of one whole call, retries included
   * @param maxConnections the HTTP connection pool's size
   * @param sweepMinAge objects younger than this are never removed by the retention sweep: in a
   *     replicated deployment another gateway may have just written (or re-found) them for a
   *     manifest it has not committed yet
   */
  record ObjectStore(URI endpoint, String region, String bucket, String prefix,
      String accessKeyId, String secretAccessKey, Duration connectTimeout,
      Duration requestTimeout, int maxConnections, Duration sweepMinAge)
      implements SegmentSettings {
    public ObjectStore {
      Objects.requireNonNull(endpoint, "endpoint");
      Objects.requireNonNull(region, "region");
      Objects.requireNonNull(bucket, "bucket");
      Objects.requireNonNull(prefix, "prefix");
      Objects.requireNonNull(accessKeyId, "accessKeyId");
      Objects.requireNonNull(secretAccessKey, "secretAccessKey");
      Objects.requireNonNull(connectTimeout, "connectTimeout");
      Objects.requireNonNull(requestTimeout, "requestTimeout");
      Objects.requireNonNull(sweepMinAge, "sweepMinAge");
      if (maxConnections < 1) {
        throw new IllegalArgumentException(
            "maxConnections: " + maxConnections + " (expected: >= 1)");
      }
    }

    /** Without the keys: settings end up in logs and test output. */
    @Override
    public String toString() {
      return "ObjectStore[endpoint=" + endpoint + ", region=" + region + ", bucket=" + bucket
          + ", prefix=" + prefix + ", connectTimeout=" + connectTimeout + ", requestTimeout="
          + requestTimeout + ", maxConnections=" + maxConnections + ", sweepMinAge="
          + sweepMinAge + "]";
    }
  }
}
