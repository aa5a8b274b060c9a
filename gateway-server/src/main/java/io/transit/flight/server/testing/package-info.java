/**
 * Test-only behaviour of the daemon, never reached in production. Starting point: {@link
 * io.transit.flight.server.testing.TestFaults}, the {@link io.transit.flight.server.GatewayHooks}
 * the CLI builds from the test-only environment variable.
 *
 * <p>Threads: parsed once on the main thread; the faults are then consulted on the engine's
 * sending and execution threads and the clock on any thread, all thread-safe.
 */
package io.transit.flight.server.testing;
