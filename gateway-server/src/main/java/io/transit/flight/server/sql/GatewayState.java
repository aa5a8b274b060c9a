package io.transit.flight.server.sql;

import io.transit.flight.admission.AdmissionRequest;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.Budgets;
import io.transit.flight.query.PlanCache;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.auth.CredentialRegistry;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.ticket.TicketScope;
import io.transit.flight.ticket.TicketService;
import io.transit.flight.ticket.VerifiedTicket;
import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.BufferAllocator;

/**
 * What the producer's services share: the current configuration (swapped whole on reload), the
 * credential registry, the ticket service, admission, the native query client, the catalog, the
 * root allocator, the streaming core (stream registry, outbound handler, T_caller pool) and the
 * plan cache.
 *
 * <p>Thread-safe: every field is final and thread-safe itself; the configuration is read through
 * an AtomicReference so each call sees one consistent snapshot.
 */
public final class GatewayState {
  private final AtomicReference<ResolvedConfig> config;
  private final CredentialRegistry credentials;
  private final TicketService tickets;
  private final AdmissionService admission;
  private final NativeQueryClient nativeClient;
  private final CatalogResults catalog;
  private final BufferAllocator allocator;
  private final StreamRegistry streams;
  private final FlightOutboundHandler handler;
  private final ExecutorService producers;
  private final ErrorMapper errors;
  private final Clock clock;
  private final PlanCache plans;

  public GatewayState(AtomicReference<ResolvedConfig> config, CredentialRegistry credentials,
      TicketService tickets, AdmissionService admission, NativeQueryClient nativeClient,
      CatalogResults catalog, BufferAllocator allocator, StreamRegistry streams,
      FlightOutboundHandler handler, ExecutorService producers, ErrorMapper errors, Clock clock,
      PlanCache plans) {
    this.config = config;
    this.credentials = credentials;
    this.tickets = tickets;
    this.admission = admission;
    this.nativeClient = nativeClient;
    this.catalog = catalog;
    this.allocator = allocator;
    this.streams = streams;
    this.handler = handler;
    this.producers = producers;
    this.errors = errors;
    this.clock = clock;
    this.plans = plans;
  }

  /** Compiled statements, shared with the native engine's planner. */
  public PlanCache plans() {
    return plans;
  }

  public TicketService tickets() {
    return tickets;
  }

  public AdmissionService admission() {
    return admission;
  }

  public NativeQueryClient nativeClient() {
    return nativeClient;
  }

  public CatalogResults catalog() {
    return catalog;
  }

  public BufferAllocator allocator() {
    return allocator;
  }

  public StreamRegistry streams() {
    return streams;
  }

  public FlightOutboundHandler handler() {
    return handler;
  }

  public ExecutorService producers() {
    return producers;
  }

  public ErrorMapper errors() {
    return errors;
  }

  public Limits limits() {
    return config.get().limits();
  }

  /** The eight scope values plus the selected role, as the caller's current binding gives them. */
  public TicketScope scopeOf(CallerBinding c) {
    ResolvedConfig cfg = config.get();
    return new TicketScope(cfg.realm(), c.principal(), cfg.service(), c.bindingRevision(),
        cfg.ingress(), c.requests(), c.source(), c.resource(), c.hasRole(), c.role());
  }

  public ReadAccess readAccessOf(CallerBinding c) {
    return new ReadAccess(c.principal(), c.hasRole(), c.role(), c.source());
  }

  public long ticketExpiryMillis() {
    return clock.millis() + config.get().ticketTtlMs();
  }

  /** The admission inputs for one statement: the caller's binding facts and the budgets. */
  public AdmissionRequest admissionRequest(
      CallerBinding c, long firstSequence, byte[] sql, long deadlineNanos) {
    Limits l = limits();
    Budgets budgets = Budgets.newBuilder()
        .setMaxResultRows(l.maxResultRows())
        .setMaxResultBytes(l.maxResultBytes())
        .setMaxSegmentBytes(l.maxSegmentBytes())
        .setRowsPerSegment(l.rowsPerSegment())
        .build();
    io.transit.flight.admission.CallerBinding subject = new io.transit.flight.admission.CallerBinding(
        c.principal(), c.principalKey(), c.hasRole(), c.role(), c.credentialEpoch(),
        config.get().service());
    return new AdmissionRequest(subject, c.table(), budgets, firstSequence, sql, deadlineNanos);
  }

  /**
   * Service policy at a disclosure boundary: the caller's binding must still exist with the scope
   * and Table declaration the ticket was verified against, it must still hold the entry-read
   * right, and the ticket must not have expired. Returns the current binding. Any thread.
   */
  public CallerBinding recheck(CallerBinding caller, VerifiedTicket ticket) {
    CallerBinding current = credentials.current(caller.name()).orElseThrow(() ->
        GatewayException.of(Cause.ACCESS_DENIED, "access.binding_revoked",
            "the caller's binding was revoked"));
    // The whole ticket scope, not just the revision: a mapping edited without a revision bump
    // (another source, requests scope or role) or a new ingress must not keep disclosing.
    if (!scopeOf(current).equals(ticket.scope())
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
    return current;
  }
}
