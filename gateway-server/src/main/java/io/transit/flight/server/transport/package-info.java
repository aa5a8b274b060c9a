/**
 * The daemon's transport edge: the gRPC listeners (TCP, optional Unix domain socket, optional
 * TLS) with every transport budget from {@code limits}, and the connection budget that refuses
 * connections beyond {@code max_connections} and closes TCP connections that do not authenticate in
 * time. See docs/limits.md, docs/security.md and docs/deployment.md.
 *
 * <p>Starting points: {@link io.transit.flight.server.transport.Listeners#build} (every listener
 * of a configuration), {@link io.transit.flight.server.transport.ConnectionBudget} (the shared
 * slot count, a transport filter and a global interceptor), {@link
 * io.transit.flight.server.transport.AuthenticationBudget} (a connection's deadline for its first
 * authenticated call).
 *
 * <p>Threads: the listeners are built, started and stopped on the main (or shutdown) thread;
 * slots are taken and returned on each connection's Netty event loop, and the budget's
 * interceptor runs on the thread that delivers a call's headers, reading only immutable
 * transport attributes. The slot counters are atomics; nothing here blocks.
 */
package io.transit.flight.server.transport;
