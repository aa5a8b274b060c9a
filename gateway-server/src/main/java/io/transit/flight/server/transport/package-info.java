/**
 * The daemon's transport edge: the gRPC listeners (TCP, optional Unix domain socket, optional
 * TLS) with every transport budget from {@code limits}, and the connection budget that refuses
 * connections beyond {@code max_connections}. See docs/limits.md and docs/deployment.md.
 */
package io.transit.flight.server.transport;
