/**
 * Thread pools: the one kind of pool the gateway and the engine run their request work on
 * ({@link io.transit.flight.threads.LastIdlePool}).
 */
package io.transit.flight.threads;
