/**
 * The Transit Flight Gateway daemon.
 *
 * <p>Starting points: {@link io.transit.flight.server.GatewayServer} (builds every component from
 * a validated configuration, serves, reloads, drains), {@link
 * io.transit.flight.server.cli.Main} (the command line).
 *
 * <p>Threads: gRPC transport threads run the auth interceptor; a bounded service executor runs
 * unary Flight calls (GetFlightInfo may wait for admission within its deadline); DoGet hands
 * production to the T_caller pool and writes through each stream's single-writer executor (see
 * {@code io.transit.flight.channel}); the signal thread runs reloads.
 */
package io.transit.flight.server;
