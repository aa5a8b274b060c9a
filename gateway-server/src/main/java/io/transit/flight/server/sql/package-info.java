/**
 * The Flight SQL producer. Starting points: {@link
 * io.transit.flight.server.sql.TransitSqlProducer} (dispatch to the services below, which {@code
 * GatewayServer} builds and passes in), {@link io.transit.flight.server.sql.StatementService}
 * (GetSchema, GetFlightInfo with admission; the first sequence parsed by {@code SequenceHeader}),
 * {@link io.transit.flight.server.sql.CompileGate} (bounded compilation: slots, parse budget,
 * deadline, cancellation), {@link io.transit.flight.server.sql.ResultStreamer} (statement DoGet,
 * its completeness checked against the manifest by {@code Coverage}), {@link
 * io.transit.flight.server.sql.MetadataService} (catalog commands), {@code NextSequenceHint} (the
 * caller's next sequence on a sequence failure).
 *
 * <p>Threads: unary calls on gRPC's service executor (compilation too; the gate's timer and
 * gRPC's cancellation only abandon a parse); DoGet production on the T_caller pool, handing
 * each batch to the channel through a {@link io.transit.flight.server.stream.BatchSender}
 * (ownership moves to the channel at hand-off); a stream's coverage is confined to its producer.
 * Authorization comes from {@link io.transit.flight.server.auth.Authorization}, one snapshot per
 * call, and comes first: every path checks the binding in force and its rights ({@code
 * Authorization.current}), and the engine's source/requester check where a Table is concerned,
 * before it compiles, sends or discloses anything.
 */
package io.transit.flight.server.sql;
