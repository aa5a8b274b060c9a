/**
 * Failures as callers see them: the status table, the bounded gRPC message and the
 * Diagnostic v1 trailer.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.diagnostic.GatewayException} — what gateway code throws: a
 *       {@link io.transit.flight.diagnostic.Cause}, a stable code, a safe message, facts.
 *   <li>{@link io.transit.flight.diagnostic.ErrorMapper} — turns any throwable into a
 *       {@code StatusRuntimeException} (interceptors, producers) or a {@code
 *       FlightRuntimeException}, with the {@code transit-diagnostic-bin} trailer.
 *   <li>{@link io.transit.flight.diagnostic.Diagnostic} — Diagnostic v1 and its bounded JSON
 *       ({@code docs/diagnostic-v1.md}).
 *   <li>{@link io.transit.flight.diagnostic.Witness}, {@link io.transit.flight.diagnostic.Basis},
 *       {@link io.transit.flight.diagnostic.Budget} — the shared-contract terms (original runtime
 *       witness, frozen basis, exact budgets) a failure may carry besides its identity.
 *   <li>{@link io.transit.flight.diagnostic.GrpcMessage} — printable-ASCII, 128-byte messages.
 *   <li>{@link io.transit.flight.diagnostic.Recovery} — default actions and outcome per cause
 *       ({@code docs/status.md}).
 * </ul>
 *
 * <p>Threads: every type here is immutable or stateless and may be used from any thread;
 * {@code ErrorMapper} logs internal failures through SLF4J from the calling thread.
 */
package io.transit.flight.diagnostic;
