package io.transit.flight.ticket;

import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.Ed25519;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.DateTimeException;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * Issues and verifies FTK1 tickets with the deployment's explicit ticket key.
 *
 * <p>The signature is Ed25519 over {@code SHA-256("transit.flight.ticket.v1\0" ‖ every byte
 * before the signature)}; it is deterministic, so replicas sharing the key issue byte-identical
 * tickets for the same inputs. Rotating the key makes every earlier ticket fail with {@code
 * ticket.signature}: there is one key, no list of old keys.
 *
 * <p><b>Verification never grants access.</b> {@link #verify} only proves that this deployment
 * issued the reference for exactly the caller's current scope and Table declaration and that it
 * has not expired. The caller must then re-check current authorization (service policy, source
 * and entry-read access) before disclosing anything, and at every bounded read after.
 *
 * <p><b>Signatures issued here are recognised, not recomputed.</b> A caller usually presents a
 * ticket to the gateway that issued it moments before (GetFlightInfo, then DoGet). The service
 * remembers the signature of each of its last {@link #ISSUED_CAPACITY} tickets by the signed
 * digest; a presented ticket whose digest and signature are both byte-equal to a remembered pair
 * carries a signature this service computed with its own key over exactly that digest, and
 * Ed25519 verification of such a pair is true by construction (signing is deterministic and
 * produces a canonical S). So that pair's verdict is known without the curve arithmetic (about
 * 0.15 ms). Anything else — another replica's ticket, an older one, any altered byte — is
 * verified in full. Every other check (definition, expiry, scope, declaration) runs on every
 * ticket either way, and no verdict differs from full verification.
 *
 * <p>Thread-safe: gRPC handler threads call {@link #issue} and {@link #verify} concurrently; the
 * remembered signatures are guarded by their own monitor ({@link IssuedSignatures}), everything
 * else is immutable. Every array passed in is read, never kept; every array returned is new.
 */
public final class TicketService {
  /** Domain of the signed digest; {@link Digests#domainSha256} adds the trailing NUL. */
  public static final String SIGNATURE_DOMAIN = "transit.flight.ticket.v1";

  /**
   * Tickets whose signatures are remembered, the oldest forgotten first: a DoGet follows its
   * GetFlightInfo within milliseconds, and this is seconds of tickets at hundreds a second, in
   * about 0.1 MB allocated once. A ticket forgotten is verified in full, so the size decides only
   * the cost.
   */
  static final int ISSUED_CAPACITY = 1024;

  private final Ed25519.KeyPair ticketKey;
  private final Ed25519.PublicKey publicKey;
  private final TransitDefinition definition;
  private final Clock clock;
  // Each signed digest and the signature issue() computed over it (guarded by its own monitor).
  private final IssuedSignatures issued = new IssuedSignatures(ISSUED_CAPACITY);
  // Full verifications run (tests: which tickets were recognised).
  private final LongAdder curveVerifications = new LongAdder();

  /**
   * @param ticketKey the deployment's ticket key (shared by replicas of one deployment)
   * @param definition this deployment's Transit definition
   * @param clock the clock expiry is checked against (injectable for tests)
   */
  public TicketService(Ed25519.KeyPair ticketKey, TransitDefinition definition, Clock clock) {
    this.ticketKey = Objects.requireNonNull(ticketKey, "ticketKey");
    this.publicKey = ticketKey.publicKey();
    this.definition = Objects.requireNonNull(definition, "definition");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  public TransitDefinition definition() {
    return definition;
  }

  public Ed25519.PublicKey publicKey() {
    return publicKey;
  }

  /**
   * Issues a signed ticket: 250 bytes for a statement reference, 244 + n for a metadata
   * reference with an n-byte command.
   *
   * @param scope the caller's current scope; its realm and service must be the definition's
   * @param declarationFingerprint the Table source declaration fingerprint (32 bytes)
   * @param expiryMillis expiry in Unix milliseconds, non-negative
   * @param reference what the ticket refers to
   * @throws IllegalArgumentException on inputs no valid ticket can carry (wrong digest length,
   *     negative expiry, scope of another realm or service); these are caller defects
   */
  public byte[] issue(
      TicketScope scope,
      byte[] declarationFingerprint,
      long expiryMillis,
      TicketReference reference) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(reference, "reference");
    if (expiryMillis < 0) {
      throw new IllegalArgumentException("expiryMillis: " + expiryMillis + " (expected: >= 0)");
    }
    if (scope.realm() != definition.realmId() || scope.service() != definition.serviceId()) {
      // Such a ticket could never verify against a scope built from this deployment's config.
      throw new IllegalArgumentException(
          "scope realm/service: "
              + Long.toUnsignedString(scope.realm())
              + "/"
              + Long.toUnsignedString(scope.service())
              + " (expected: the definition's "
              + Long.toUnsignedString(definition.realmId())
              + "/"
              + Long.toUnsignedString(definition.serviceId())
              + ")");
    }
    byte[] ticket =
        Ftk1Layout.encodeUnsigned(
            definition.digest(), scope, declarationFingerprint, expiryMillis, reference);
    int signedLength = ticket.length - Ed25519.SIGNATURE_BYTES;
    byte[] digest = signedDigest(ticket, signedLength);
    byte[] signature = ticketKey.sign(digest);
    System.arraycopy(signature, 0, ticket, signedLength, signature.length);
    issued.remember(digest, signature);
    return ticket;
  }

  /**
   * Verifies {@code ticket} in this order, stopping at the first failure: size, layout,
   * definition, signature, expiry, scope (all eight fields and the role), declaration.
   *
   * <table>
   *   <caption>Failures</caption>
   *   <tr><th>check</th><th>cause</th><th>code</th></tr>
   *   <tr><td>size</td><td>INVALID_TICKET</td><td>ticket.size</td></tr>
   *   <tr><td>layout</td><td>INVALID_TICKET</td><td>ticket.layout</td></tr>
   *   <tr><td>definition</td><td>INVALID_TICKET</td><td>ticket.definition</td></tr>
   *   <tr><td>signature</td><td>INVALID_TICKET</td><td>ticket.signature</td></tr>
   *   <tr><td>clock reading invalid</td><td>CLOCK</td><td>ticket.clock</td></tr>
   *   <tr><td>now &ge; expiry</td><td>TICKET_EXPIRED</td><td>ticket.expired</td></tr>
   *   <tr><td>scope</td><td>TICKET_SCOPE</td><td>ticket.scope</td></tr>
   *   <tr><td>declaration</td><td>TICKET_SCOPE</td><td>ticket.declaration</td></tr>
   * </table>
   *
   * <p>A successful result is not authorization: see the class documentation.
   *
   * @param ticket the ticket bytes as received
   * @param currentScope the caller's current scope, built from its authenticated binding
   * @param currentDeclarationFingerprint the fingerprint of the caller's current published
   *     Table declaration (32 bytes)
   * @throws GatewayException for every ticket failure above
   */
  public VerifiedTicket verify(
      byte[] ticket, TicketScope currentScope, byte[] currentDeclarationFingerprint) {
    Objects.requireNonNull(currentScope, "currentScope");
    byte[] currentDeclaration =
        Ftk1Layout.digestCopy("currentDeclarationFingerprint", currentDeclarationFingerprint);

    Ftk1Layout.Parsed parsed = Ftk1Layout.parse(ticket);
    if (!definition.matches(parsed.definition())) {
      throw new GatewayException(
          Cause.INVALID_TICKET, "ticket.definition", "ticket is for another Transit definition");
    }
    byte[] signature = Arrays.copyOfRange(ticket, parsed.signedLength(), ticket.length);
    byte[] digest = signedDigest(ticket, parsed.signedLength());
    // A pair this service issued is recognised without the curve arithmetic (class doc).
    if (!issued.contains(digest, signature) && !verifyOnCurve(digest, signature)) {
      throw new GatewayException(
          Cause.INVALID_TICKET, "ticket.signature", "ticket signature does not verify");
    }
    long now = observeClock();
    // Valid only strictly before expiry; expiry is u64 on the wire, so compare unsigned.
    if (Long.compareUnsigned(now, parsed.expiryMillis()) >= 0) {
      throw new GatewayException(Cause.TICKET_EXPIRED, "ticket.expired", "ticket has expired")
          .with(Fact.unsigned("expiry_unix_ms", parsed.expiryMillis()));
    }
    String field = parsed.scope().firstMismatch(currentScope);
    if (field != null) {
      throw new GatewayException(
              Cause.TICKET_SCOPE, "ticket.scope", "ticket scope does not match the caller")
          .with("field", field);
    }
    if (!MessageDigest.isEqual(parsed.declarationFingerprint(), currentDeclaration)) {
      throw new GatewayException(
          Cause.TICKET_SCOPE,
          "ticket.declaration",
          "ticket names another Table declaration");
    }
    return new VerifiedTicket(
        parsed.scope(), parsed.declarationFingerprint(), parsed.expiryMillis(), parsed.reference());
  }

  private boolean verifyOnCurve(byte[] digest, byte[] signature) {
    curveVerifications.increment();
    return publicKey.verify(digest, signature);
  }

  /** Verifications that ran Ed25519's arithmetic so far (tests). */
  long curveVerifications() {
    return curveVerifications.sum();
  }

  private long observeClock() {
    return observe(clock);
  }

  /**
   * {@code clock}'s reading in Unix milliseconds, as every ticket check takes it (at issue, at
   * redemption, at each disclosure boundary): a failed or negative reading is UNAVAILABLE {@code
   * ticket.clock} (cause CLOCK), never an expiry or an internal error.
   */
  public static long observe(Clock clock) {
    long now;
    try {
      now = clock.millis();
    } catch (DateTimeException | ArithmeticException e) {
      throw new GatewayException(Cause.CLOCK, "ticket.clock", "clock reading failed", e);
    }
    // Unix time before 1970 is not an observation this deployment can make.
    if (now < 0) {
      throw new GatewayException(Cause.CLOCK, "ticket.clock", "clock reading is negative");
    }
    return now;
  }

  private static byte[] signedDigest(byte[] ticket, int signedLength) {
    return Digests.domainSha256(SIGNATURE_DOMAIN, Arrays.copyOf(ticket, signedLength));
  }
}
