package io.transit.flight.server.auth;

import io.transit.flight.admission.AdmissionSubject;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.nativequery.RightsLedger;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.ticket.TicketScope;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.VerifiedTicket;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's one authorization object: it holds the current {@link AuthSnapshot} (this
 * replica's configuration and credentials) and the deployment's current rights from the journal,
 * and derives from them everything a call needs to know about its caller. Each derivation reads
 * one view, so the ticket scope, read access, admission subject and ticket lifetime of one {@link
 * Grant} always come from the same configuration and rights version, even across a reload.
 *
 * <p>Rights live in the journal ({@link RightsLedger}; docs/deployment.md "Shared rights"): {@link
 * #install} records the snapshot's rights there (a new epoch when they differ) before it swaps the
 * snapshot, and every decision first reads the journal's current epoch (one single-row read) and
 * loads a newer version before deciding. So a reload on one replica is in force on every replica
 * sharing the journal once its commit returned, and no decision is made on rights the journal
 * could not confirm: an unreadable journal fails the call UNAVAILABLE {@code
 * query.journal_unavailable}. A caller missing from the journal's rights is revoked; one whose
 * principal, publication or role there differs from this replica's binding is refused as changed
 * (the replicas' files disagree until this one is reloaded).
 *
 * <p>Threads: {@link #authenticate} (from the interceptor) and {@link #current} on the service
 * executor (a DoGet's opening included), {@link #recheck} on T_caller workers; {@link #install}
 * on the reload (signal) thread, and at start — one install at a time, which {@code
 * cli.Reloads} guarantees (its journal commit and its swap are not one atomic step). The snapshot and the view are
 * immutable and swapped whole; the view is replaced only under {@code refreshing}, which also
 * orders the engine's rights updates, so an older version never replaces a newer one there.
 */
public final class Authorization {
  private static final Logger log = LoggerFactory.getLogger(Authorization.class);

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

  /** This replica's snapshot with the journal's rights of one epoch, by caller name. */
  private record View(AuthSnapshot local, long epoch, Map<String, RightsDocument.Entry> rights) {}

  private final AtomicReference<AuthSnapshot> snapshot; // any thread reads; install swaps
  private final AtomicReference<View> view; // any thread reads; replaced under refreshing
  private final Object refreshing = new Object(); // held across a journal read and the engine's update
  private final RightsLedger ledger;
  private final Consumer<Collection<PrincipalRights>> engineRights;
  private final Clock clock;

  /**
   * Records {@code initial}'s rights in {@code ledger} (the start of a reload) and loads the
   * current version. {@code engineRights} receives the native rights of every version put in
   * force (the engine's {@code updateRights}), on the thread that loaded it.
   *
   * @throws GatewayException UNAVAILABLE {@code query.journal_unavailable} when the journal
   *     cannot record or return the rights
   */
  public Authorization(AuthSnapshot initial, RightsLedger ledger,
      Consumer<Collection<PrincipalRights>> engineRights, Clock clock) {
    this.snapshot = new AtomicReference<>(initial);
    this.ledger = ledger;
    this.engineRights = engineRights;
    this.clock = clock;
    ledger.publish(RightsDocument.encode(initial.bindings()));
    this.view = new AtomicReference<>(new View(initial, -1, Map.of()));
    refresh();
  }

  /** The snapshot in force; a reload compares the next configuration with its config. */
  public AuthSnapshot current() {
    return snapshot.get();
  }

  /**
   * Reload: records {@code next}'s rights in the journal (a new epoch when they differ from the
   * current version; nothing when equal), then swaps the snapshot and loads the version in force.
   * Returns once that commit returned, so every replica's next decision sees the rights. When
   * the journal refuses, nothing is swapped. Once the rights are recorded the reload is in force
   * whatever follows: a failure to load them back here is logged and left to the next call's
   * view, which loads them first (and fails that call UNAVAILABLE while the journal cannot).
   *
   * <p>Returns the rights epoch in force once the commit returned.
   *
   * @throws GatewayException UNAVAILABLE {@code query.journal_unavailable}: nothing was swapped;
   *     or UNKNOWN_OUTCOME {@code rights.unknown_outcome}: nothing was swapped here, but the
   *     commit's answer was lost, so the journal (which every decision reads first) may hold them
   */
  public long install(AuthSnapshot next) {
    long epoch = ledger.publish(RightsDocument.encode(next.bindings()));
    snapshot.set(next);
    try {
      refresh();
    } catch (RuntimeException e) {
      log.warn("configuration reload in force; loading the journal's rights failed and is left"
          + " to the next call: {}", e.toString());
    }
    return epoch;
  }

  /** The journal's current rights epoch this replica decides under (tests, operators' logs). */
  public long rightsEpoch() {
    return view().epoch();
  }

  /**
   * The view to decide under: the journal's current epoch is read (one single-row read) and a
   * newer version, or a newer local snapshot, is loaded first.
   */
  private View view() {
    long epoch = ledger.epoch();
    View v = view.get();
    if (v.epoch() == epoch && v.local() == snapshot.get()) {
      return v;
    }
    return refresh(epoch);
  }

  /** Loads the journal's current version (at start, after an install). */
  private View refresh() {
    return refresh(Long.MAX_VALUE);
  }

  /**
   * Loads the journal's current version unless another thread, while this one waited for the
   * lock, already installed a view as new as the epoch this one read ({@code seen}): on an epoch
   * change every thread deciding at that moment comes here, and each would otherwise read the
   * journal again, one after another.
   */
  private View refresh(long seen) {
    synchronized (refreshing) {
      AuthSnapshot local = snapshot.get();
      View installed = view.get();
      if (installed.epoch() >= seen && installed.local() == local) {
        return installed;
      }
      RightsLedger.Version version = ledger.current();
      View v = view.get();
      // Epochs only grow; under the lock the version just read is at least the installed one.
      if (v.epoch() == version.epoch() && v.local() == local) {
        return v;
      }
      View next = new View(local, version.epoch(), RightsDocument.decode(version.document()));
      List<PrincipalRights> forEngine = new ArrayList<>();
      for (CallerBinding b : local.bindings()) {
        RightsDocument.Entry e = next.rights().get(b.name());
        if (e != null && e.grantsTo(b)) {
          forEngine.add(b.withRights(e.send(), e.inspect(), e.read()).nativeRights());
        }
      }
      // The engine first: a call that sees the new view meets an engine that enforces it.
      engineRights.accept(forEngine);
      view.set(next);
      return next;
    }
  }

  /** The caller's binding in force: this replica's, with the journal's current rights. */
  private static CallerBinding inForce(View v, String name) {
    CallerBinding local = v.local().current(name).orElseThrow(Authorization::revoked);
    RightsDocument.Entry e = v.rights().get(name);
    if (e == null) {
      throw revoked();
    }
    if (!e.grantsTo(local)) {
      throw GatewayException.of(Cause.ACCESS_DENIED, "access.binding_changed",
          "the caller's binding differs from the deployment's current rights");
    }
    return local.withRights(e.send(), e.inspect(), e.read());
  }

  private static GatewayException revoked() {
    return GatewayException.of(Cause.ACCESS_DENIED, "access.binding_revoked",
        "the caller's binding was revoked");
  }

  /** The binding a Bearer token authenticates, if any. */
  public Optional<CallerBinding> authenticate(String token) {
    return snapshot.get().lookup(token);
  }

  /**
   * Service policy before a call compiles, sends or discloses anything: the binding the caller's
   * credential authenticated to must still be the binding in force — same scope, Table
   * declaration, principal key and credential (token and epoch) — and must hold each of {@code
   * needed} in the journal's current rights. Reads the live view, never the binding cached when
   * the call was authenticated; UNAVAILABLE {@code query.journal_unavailable} when the journal
   * cannot say. Returns the grant of the binding in force; fails ACCESS_DENIED ({@code
   * access.binding_revoked}, {@code access.binding_changed}, {@code access.<right>_revoked}) with
   * nothing of the request in it.
   */
  public Grant current(CallerBinding authenticated, Right... needed) {
    View v = view();
    CallerBinding current = inForce(v, authenticated.name());
    Grant grant = grantOf(current, v.local().config());
    // A reload between authentication and now: the credential was checked against another
    // binding, so neither may be used.
    if (!grant.scope().equals(grantOf(authenticated, v.local().config()).scope())
        || !Arrays.equals(current.declarationFingerprint(), authenticated.declarationFingerprint())
        || !current.sameCredential(authenticated)
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
   * and Table declaration the ticket was verified against, the credential that authenticated the
   * call must still be the caller's, it must still hold the entry-read right, and the ticket must
   * not have expired. Returns the current grant.
   */
  public Grant recheck(CallerBinding caller, VerifiedTicket ticket) {
    View v = view();
    CallerBinding current = inForce(v, caller.name());
    // A replaced credential (a leaked one, rotated out) ends the streams it opened, not only its
    // next call.
    if (!current.sameCredential(caller)) {
      throw GatewayException.of(Cause.ACCESS_DENIED, "access.binding_changed",
          "the caller's credential was replaced during the call");
    }
    Grant grant = grantOf(current, v.local().config());
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
    long now = TicketService.observe(clock);
    // Unsigned, as the ticket's verification compares it: one expiry rule everywhere.
    if (Long.compareUnsigned(now, ticket.expiryMillis()) >= 0) {
      // As TicketService's check at the stream's start answers it: the same message and fact.
      throw GatewayException.of(Cause.TICKET_EXPIRED, "ticket.expired", "ticket has expired")
          .with(Fact.unsigned("expiry_unix_ms", ticket.expiryMillis()));
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
    return TicketService.observe(clock) + grant.ticketTtlMs();
  }
}
