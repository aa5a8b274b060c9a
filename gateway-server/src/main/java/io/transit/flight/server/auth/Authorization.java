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
 * <p>Threads: {@link #authenticate} on gRPC transport threads, {@link #grant} on the service
 * executor, {@link #recheck} on T_caller workers; {@link #install} on the reload (signal) thread.
 * The snapshot is immutable and swapped whole, so no lock is needed.
 */
public final class Authorization {
  /** What one call may do, all from one snapshot. */
  public record Grant(
      CallerBinding caller,
      TicketScope scope,
      ReadAccess readAccess,
      AdmissionSubject admissionSubject,
      long ticketTtlMs) {}

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

  /** The caller's grant under the configuration in force now. */
  public Grant grant(CallerBinding caller) {
    return grantOf(caller, snapshot.get().config());
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
