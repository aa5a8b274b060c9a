/**
 * The daemon's transport edge: the gRPC listeners (TCP, optional Unix domain socket, optional
 * TLS) with every transport budget from {@code limits}, and the connection budget that refuses
 * connections beyond {@code max_connections} ({@link
 * io.transit.flight.server.transport.ConnectionBudget}) and closes TCP connections that do not
 * authenticate in time ({@link io.transit.flight.server.transport.AuthenticationBudget}). See
 * docs/limits.md, docs/security.md and docs/deployment.md.
 */
package io.transit.flight.server.transport;
