package io.transit.flight.ticket;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * A ticket that passed {@link TicketService#verify}: well formed, of this deployment's
 * definition, signed by the ticket key, unexpired at the verifying clock reading, and bound to
 * the caller's current scope and Table declaration.
 *
 * <p>This is not a grant of access. The caller re-checks current authorization (service policy,
 * source and entry-read rights) before reading anything the reference names, and again on every
 * bounded read.
 *
 * @param scope the scope the ticket binds (equal to the caller's current scope)
 * @param declarationFingerprint the Table source declaration fingerprint (32 bytes, copied)
 * @param expiryMillis the ticket's expiry, Unix milliseconds
 * @param reference what the ticket refers to
 */
public record VerifiedTicket(
    TicketScope scope,
    byte[] declarationFingerprint,
    long expiryMillis,
    TicketReference reference) {

  public VerifiedTicket {
    declarationFingerprint = Ftk1Layout.digestCopy("declarationFingerprint", declarationFingerprint);
  }

  @Override
  public byte[] declarationFingerprint() {
    return declarationFingerprint.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof VerifiedTicket other
        && scope.equals(other.scope)
        && Arrays.equals(declarationFingerprint, other.declarationFingerprint)
        && expiryMillis == other.expiryMillis
        && reference.equals(other.reference);
  }

  @Override
  public int hashCode() {
    int h = scope.hashCode();
    h = 31 * h + Arrays.hashCode(declarationFingerprint);
    h = 31 * h + Long.hashCode(expiryMillis);
    return 31 * h + reference.hashCode();
  }

  @Override
  public String toString() {
    return "VerifiedTicket[scope="
        + scope
        + ", declarationFingerprint="
        + HexFormat.of().formatHex(declarationFingerprint)
        + ", expiryMillis="
        + expiryMillis
        + ", reference="
        + reference
        + "]";
  }
}
