package io.transit.flight.admission;

import io.transit.flight.crypto.Digests;
import io.transit.flight.proto.QueryStatus;
import java.util.Arrays;

/**
 * A statement whose query succeeded: the native correlation, the upload namespace (= first
 * sequence), the next native sequence the caller must use, the final query status, the SHA-256
 * of the canonical retained manifest (what the FTK1 statement ticket carries), the exact total
 * row count, and whether the chain's first command was already recorded (a retry, {@code
 * replayed}: the engine's word, from the command's own transaction). Sequences, correlation and
 * rows are unsigned 64-bit values.
 */
public record Admitted(
    long correlation,
    long namespace,
    long nextSequence,
    QueryStatus status,
    byte[] manifestSha256,
    long totalRows,
    boolean replayed) {

  public Admitted {
    manifestSha256 = manifestSha256.clone();
  }

  @Override
  public byte[] manifestSha256() {
    return manifestSha256.clone();
  }

  /** FlightInfo.app_metadata: {@code {"version":1,"next_sequence":N}}, N unsigned decimal. */
  public String appMetadataJson() {
    return "{\"version\":1,\"next_sequence\":" + Long.toUnsignedString(nextSequence) + "}";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Admitted other
        && correlation == other.correlation
        && namespace == other.namespace
        && nextSequence == other.nextSequence
        && status.equals(other.status)
        && Arrays.equals(manifestSha256, other.manifestSha256)
        && totalRows == other.totalRows
        && replayed == other.replayed;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(correlation) * 31 + Arrays.hashCode(manifestSha256);
  }

  @Override
  public String toString() {
    return "Admitted[correlation=" + Long.toUnsignedString(correlation)
        + ", namespace=" + Long.toUnsignedString(namespace)
        + ", nextSequence=" + Long.toUnsignedString(nextSequence)
        + ", manifestSha256=" + Digests.hex(manifestSha256)
        + ", totalRows=" + Long.toUnsignedString(totalRows)
        + ", replayed=" + replayed + "]";
  }
}
