/**
 * Who the caller is and what it may do. Starting points: {@link
 * io.transit.flight.server.auth.AuthInterceptor} (maps the Bearer credential of every RPC to a
 * {@link io.transit.flight.server.auth.CallerBinding} and refuses override headers), {@link
 * io.transit.flight.server.auth.Authorization} (the one object deriving a call's ticket scope,
 * read access and admission subject from the live snapshot and the journal's current rights,
 * checking the binding's rights before anything is compiled or disclosed, and re-checking them at
 * each disclosure), {@link io.transit.flight.server.auth.AuthSnapshot} (configuration,
 * credentials and rights swapped whole on reload), {@code RightsDocument} (the rights as the
 * journal records them), {@link io.transit.flight.server.auth.CallerContext} (the binding inside
 * a call).
 *
 * <p>Threads: the interceptor and grants run on the service executor (grpc-java starts a call
 * there),
 * rechecks on T_caller workers; each grant and recheck reads the journal's rights epoch, and the
 * thread that finds a newer one loads it under {@code Authorization}'s refresh lock. The snapshot
 * is immutable and replaced by one reference swap on the reload (signal) thread, after its rights
 * were recorded in the journal.
 */
package io.transit.flight.server.auth;
