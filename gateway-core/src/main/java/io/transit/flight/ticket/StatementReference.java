package io.transit.flight.ticket;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * Tag 1: a retained statement result, named by its native correlation and the SHA-256 of its
 * canonical retained manifest. DoGet compares the manifest it reads against this digest.
 *
 * <p>Immutable: the digest is copied in and out.
 *
 * @param correlation the native query correlation (u64)
 * @param manifestSha256 SHA-256 of the canonical retained manifest (32 bytes)
 */
public record StatementReference(long correlation, byte[] manifestSha256)
    implements TicketReference {

  public static final int TAG = 1;

  public StatementReference {
    manifestSha256 = Ftk1Layout.digestCopy("manifestSha256", manifestSha256);
  }

  @Override
  public byte[] manifestSha256() {
    return manifestSha256.clone();
  }

  @Override
  public int tag() {
    return TAG;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StatementReference other
        && correlation == other.correlation
        && Arrays.equals(manifestSha256, other.manifestSha256);
  }

  @Override
  public int hashCode() {
    return 31 * Long.hashCode(correlation) + Arrays.hashCode(manifestSha256);
  }

  @Override
  public String toString() {
    return "StatementReference[correlation="
        + Long.toUnsignedString(correlation)
        + ", manifestSha256="
        + HexFormat.of().formatHex(manifestSha256)
        + "]";
  }
}
