/**
 * Thread pools: the one kind of pool the gateway and the engine run their request work on
 * ({@link io.transit.flight.threads.LastIdlePool}, with the one way such a pool is stopped), the
 * hand-over that keeps a queued task's last word when its pool stops ({@link
 * io.transit.flight.threads.ClaimOnce}), and the one timer every deadline is scheduled on ({@link
 * io.transit.flight.threads.DeadlineTimer}).
 */
package io.transit.flight.threads;
