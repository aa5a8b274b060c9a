/**
 * The daemon's transport edge: the gRPC listeners (TCP, optional Unix domain socket, optional
 * TLS) with every transport budget from {@code limits}, the connection budget that refuses
 * connections beyond {@code max_connections} and closes TCP connections that do not authenticate in
 * time, and the end of each DoGet call as the transport sees it. See docs/limits.md,
 * docs/security.md and docs/deployment.md.
 *
 * <p>Starting points: {@link io.transit.flight.server.transport.Listeners#build} (every listener
 * of a configuration), {@link io.transit.flight.server.transport.ConnectionBudget} (the shared
 * slot count, a transport filter and a global interceptor), {@link
 * io.transit.flight.server.transport.AuthenticationBudget} (a connection's deadline for its first
 * authenticated call), {@link io.transit.flight.server.transport.CallEnds} (when a DoGet call is
 * over, from its stream's end that {@link io.transit.flight.server.transport.StreamBound} puts in
 * the call's gRPC Context, and the reset of a call whose client does not read its end).
 *
 * <p>Threads: the listeners are built, started and stopped on the main (or shutdown) thread;
 * slots are taken and returned on each connection's Netty event loop, and the budget's
 * interceptor runs on the thread that delivers a call's headers, reading only immutable
 * transport attributes. The slot counters are atomics; nothing here blocks. A call's end is
 * completed on its connection's event loop or on gRPC's executor, whichever reports it first;
 * a reset is scheduled on the deadline timer and decided on the event loop ({@code CallEnds}
 * names each method's thread).
 */
package io.transit.flight.server.transport;
