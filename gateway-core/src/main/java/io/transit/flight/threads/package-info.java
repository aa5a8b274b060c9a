/**
 * Thread pools: the one kind of pool the gateway and the engine run their request work on
 * ({@link io.transit.flight.threads.LastIdlePool}, with the one way such a pool is stopped), the
 * hand-over that keeps a queued task's last word when its pool stops ({@link
 * io.transit.flight.threads.ClaimOnce}), and deadline timers ({@link
 * io.transit.flight.threads.DeadlineTimer}): the daemon's one, which every stream and compile
 * deadline is scheduled on, and the S3 segment store's own, whose task aborts a GET's body.
 *
 * <p>Threads: pools and timers are built and stopped by their owners; tasks are handed over from
 * any thread. A task's failure is logged (ERROR) by the pool or timer that ran it.
 */
package io.transit.flight.threads;
