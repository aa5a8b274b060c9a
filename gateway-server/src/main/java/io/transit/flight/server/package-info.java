/**
 * The Transit Flight Gateway daemon: composition and lifecycle.
 *
 * <p>Starting points: {@link io.transit.flight.server.GatewayServer} (the one place every
 * component is built from a validated configuration, by constructor injection; serves, reloads,
 * drains; the only place the embedded engine is constructed), {@code Bindings} (caller mappings
 * to an {@link io.transit.flight.server.auth.AuthSnapshot}), {@link
 * io.transit.flight.server.GatewayHooks} (the one test seam), {@link
 * io.transit.flight.server.cli.Main} (the command line).
 *
 * <p>Threads: the bounded service executor ({@code transit-grpc}, never a Netty event loop) runs
 * the auth interceptor and the unary Flight calls (GetFlightInfo may wait for admission within
 * its deadline); DoGet hands production to the T_caller pool and writes through each stream's
 * single-writer executor (see {@code io.transit.flight.channel}); a signal thread runs reloads (the
 * main thread one held while starting), which build a whole snapshot, record its rights in the
 * journal and install it with one swap.
 */
package io.transit.flight.server;
