package io.transit.flight.diagnostic;

/**
 * The query identity a diagnostic may carry. Every field is an unsigned 64-bit value (held in
 * a {@code long}'s bits) or null when unknown; JSON writes them as decimal strings so no
 * consumer loses precision above 2^53.
 *
 * @param namespace the upload namespace (the statement's first sequence)
 * @param correlation the native query correlation
 * @param firstSequence the first native sequence of the statement (x-transit-request-sequence)
 * @param nativeSequence the native sequence whose command failed or whose outcome is unknown
 */
public record Identity(Long namespace, Long correlation, Long firstSequence, Long nativeSequence) {
  public static final Identity NONE = new Identity(null, null, null, null);

  public boolean isEmpty() {
    return namespace == null && correlation == null && firstSequence == null
        && nativeSequence == null;
  }
}
