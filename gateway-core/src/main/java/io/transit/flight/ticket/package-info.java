/**
 * FTK1 tickets: the signed, scoped, expiring references that GetFlightInfo returns and DoGet
 * redeems.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.ticket.TicketService} — {@code issue} and {@code verify} with
 *       the deployment's ticket key; verification never grants access by itself.
 *   <li>{@link io.transit.flight.ticket.TicketScope}, {@link
 *       io.transit.flight.ticket.StatementReference}, {@link
 *       io.transit.flight.ticket.MetadataReference} — what a ticket binds and names.
 *   <li>{@link io.transit.flight.ticket.TransitDefinition} — the deployment definition digest,
 *       the format's version identifier.
 *   <li>The Table source declaration fingerprint a ticket binds is {@link
 *       io.transit.flight.crypto.DeclarationFingerprint}, shared with admission and the engine.
 *   <li>{@link io.transit.flight.ticket.Ftk1Layout} — offsets, sizes and strict parsing.
 * </ul>
 *
 * <p>Threads: every class here is immutable or stateless and may be called from any thread
 * (the gRPC handler threads in practice). Byte arrays passed in are copied or only read; byte
 * arrays returned are fresh copies owned by the caller. The operator documentation is {@code
 * docs/tickets.md}.
 */
package io.transit.flight.ticket;
