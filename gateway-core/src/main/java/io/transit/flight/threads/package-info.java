/**
 * Thread pools: the one kind of pool the gateway and the engine run their request work on
 * ({@link io.transit.flight.threads.LastIdlePool}), and the one timer every deadline is scheduled on
 * ({@link io.transit.flight.threads.DeadlineTimer}).
 */
package io.transit.flight.threads;
