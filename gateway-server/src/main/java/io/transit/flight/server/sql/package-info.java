/**
 * The Flight SQL producer. Starting points: {@link
 * io.transit.flight.server.sql.TransitSqlProducer} (dispatch), {@code StatementService}
 * (GetSchema, GetFlightInfo with admission), {@code CompileGate} (bounded compilation: slots,
 * parse budget, deadline, cancellation), {@code ResultStreamer} (statement DoGet), {@code
 * MetadataService} (catalog commands), {@link io.transit.flight.server.sql.GatewayState} (what
 * they share).
 *
 * <p>Threads: unary calls on gRPC's service executor (compilation too; the gate's timer and
 * gRPC's cancellation only abandon a parse); DoGet production on the T_caller pool,
 * handing each batch to the channel (ownership moves to the channel at hand-off).
 */
package io.transit.flight.server.sql;
