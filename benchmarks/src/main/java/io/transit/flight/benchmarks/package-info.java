/**
 * JMH benchmarks of the gateway's hot paths ({@code scripts/bench --jmh}) and the mandated-work
 * probe {@code scripts/bench} runs beside P1-P4; never run during the build.
 *
 * <p>Starting points: {@link io.transit.flight.benchmarks.MandatedWork} (the floor each P1/P2
 * target is set beside), one {@code *Benchmark} class per hot path (cell adapter, segment read,
 * command signing, journal append, tickets), {@code Fixtures} (their shared data).
 *
 * <p>Threads: each benchmark's state is JMH {@code Scope.Thread} (one per measuring thread);
 * nothing is shared between threads.
 */
package io.transit.flight.benchmarks;
