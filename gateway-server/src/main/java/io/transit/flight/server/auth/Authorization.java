package io.transit.flight.server.auth;

import io.transit.flight.admission.AdmissionSubject;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.ticket.TicketScope;
import io.transit.flight.ticket.VerifiedTicket;
import java.time.Clock;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The gateway's one authorization object: it holds the current {@link AuthSnapshot} and derives
 * from it everything a call needs to know about its caller. Each derivation reads the snapshot
 * once, so the ticket scope, read access, admission subject and ticket lifetime of one {@link
 * Grant} always come from the same configuration, even across a reload.
 *
 * <p>Threads: {@link #authenticate} on gRPC transport threads, {@link #current} on the service
 * executor and on the gRPC thread that opens a DoGet, {@link #recheck} on T_caller workers;
 * {@link #install} on the reload (signal) thread. The snapshot is immutable and swapped whole,
 * so no lock is needed.
 */
public final class Authorization {
  /** What one call may do, all from one snapshot. */
  public record Grant(
      CallerBinding caller,
      TicketScope scope,
      ReadAccess readAccess,
      AdmissionSubject admissionSubject,
      long ticketTtlMs) {}

  /** A right of the caller's binding ({@code rights.*} in the configuration). */
  public enum Right {
    /** Admit statements. */
    SEND("send"),
    /** Read statuses and manifests of its own results. */
    INSPECT("inspect"),
    /** Read its Table's entries: result rows, catalog rows, schemas, compile diagnostics. */
    READ("read");

    private final String name;

    Right(String name) {
      this.name = name;
    }

    boolean heldBy(CallerBinding b) {
      return switch (this) {
        case SEND -> b.canSend();
        case INSPECT -> b.canInspect();
        case READ -> b.canRead();
      };
    }
  }

  private final AtomicReference<AuthSnapshot> snapshot;
  private final Clock clock;

  public Authorization(AuthSnapshot initial, Clock clock) {
    this.snapshot = new AtomicReference<>(initial);
    this.clock = clock;
  }

  /** The snapshot in force; a reload compares the next configuration with its config. */
  public AuthSnapshot current() {
    return snapshot.get();
  }

  /** Reload: every later call sees {@code next} whole. */
  public void install(AuthSnapshot next) {
    snapshot.set(next);
  }

  /** The binding a Bearer token authenticates, if any. */
  public Optional<CallerBinding> authenticate(String token) {
    return snapshot.get().lookup(token);
  }

  /**
   * Service policy before a call compiles, sends or discloses anything: the binding the caller's
   * credential authenticated to must still be the binding in force — same scope, Table
   * declaration, principal key and credential epoch — and must hold each of {@code needed}. Reads
   * the live snapshot, never the binding cached when the call was authenticated. Returns the grant
   * of the binding in force; fails ACCESS_DENIED ({@code access.binding_revoked}, {@code
   * access.binding_changed}, {@code access.<right>_revoked}) with nothing of the request in it.
   */
  public Grant current(CallerBinding authenticated, Right... needed) {
    AuthSnapshot s = snapshot.get();
    CallerBinding current = s.current(authenticated.name()).orElseThrow(() ->
        GatewayException.of(Cause.ACCESS_DENIED, "access.binding_revoked",
            "the caller's binding was revoked"));
    Grant grant = grantOf(current, s.config());
    // A reload between authentication and now: the credential was checked against another
    // binding, so neither may be used.
    if (!grant.scope().equals(grantOf(authenticated, s.config()).scope())
        || !Arrays.equals(current.declarationFingerprint(), authenticated.declarationFingerprint())
        || current.credentialEpoch() != authenticated.credentialEpoch()
        || !current.principalKey().publicKey().equals(authenticated.principalKey().publicKey())) {
      throw GatewayException.of(Cause.ACCESS_DENIED, "access.binding_changed",
          "the caller's binding changed during the call");
    }
    for (Right r : needed) {
      if (!r.heldBy(current)) {
        throw GatewayException.of(Cause.ACCESS_DENIED, "access." + r.name + "_revoked",
            "the caller does not hold the " + r.name + " right");
      }
    }
    return grant;
  }

  /**
   * Service policy at a disclosure boundary: the caller's binding must still exist with the scope
   * and Table declaration the ticket was verified against, it must still hold the entry-read
   * right, and the ticket must not have expired. Returns the current grant.
   */
  public Grant recheck(CallerBinding caller, VerifiedTicket ticket) {
    AuthSnapshot s = snapshot.get();
    CallerBinding current = s.current(caller.name()).orElseThrow(() ->
        GatewayException.of(Cause.ACCESS_DENIED, "access.binding_revoked",
            "the caller's binding was revoked"));
    Grant grant = grantOf(current, s.config());
    // The whole ticket scope, not just the revision: a mapping edited without a revision bump
    // (another source, requests scope or role) or a new ingress must not keep disclosing.
    if (!grant.scope().equals(ticket.scope())
        || !Arrays.equals(current.declarationFingerprint(), ticket.declarationFingerprint())) {
      throw GatewayException.of(Cause.ACCESS_DENIED, "access.binding_changed",
          "the caller's binding changed since the ticket was issued");
    }
    if (!current.canRead()) {
      throw GatewayException.of(Cause.ACCESS_DENIED, "access.read_revoked",
          "the caller's read right was revoked");
    }
    long now = clock.millis();
    if (now < 0) {
      throw GatewayException.of(Cause.CLOCK, "clock.invalid", "the clock gave an invalid reading");
    }
    if (now >= ticket.expiryMillis()) {
      throw GatewayException.of(Cause.TICKET_EXPIRED, "ticket.expired", "the ticket has expired");
    }
    return grant;
  }

  private Grant grantOf(CallerBinding c, ResolvedConfig cfg) {
    TicketScope scope = new TicketScope(cfg.realm(), c.principal(), cfg.service(),
        c.bindingRevision(), cfg.ingress(), c.requests(), c.source(), c.resource(), c.hasRole(),
        c.role());
    ReadAccess read = new ReadAccess(c.principal(), c.hasRole(), c.role(), c.source());
    AdmissionSubject subject = new AdmissionSubject(c.principal(), c.principalKey(), c.hasRole(),
        c.role(), c.credentialEpoch(), cfg.service());
    return new Grant(c, scope, read, subject, cfg.ticketTtlMs());
  }

  /** The expiry of a ticket issued now under {@code grant}: read at issue, not at grant time. */
  public long ticketExpiryMillis(Grant grant) {
    return clock.millis() + grant.ticketTtlMs();
  }
}
