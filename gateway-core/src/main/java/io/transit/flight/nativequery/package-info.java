/**
 * The native query system's public query client, as the gateway sees it, and its model.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.nativequery.NativeQueryClient} — send signed commands, await
 *       queries, read retained manifests and segments.
 *   <li>{@link io.transit.flight.nativequery.NativeSignatures} — the native signature contract
 *       (command signatures, the principal proof encoding) that admission signs with and the
 *       engine verifies with.
 *   <li>{@link io.transit.flight.nativequery.PrincipalRights}, {@link
 *       io.transit.flight.nativequery.Publication}, {@link io.transit.flight.nativequery.Planner},
 *       {@link io.transit.flight.nativequery.ReadAccess} — what the server hands the engine.
 *   <li>{@link io.transit.flight.nativequery.QueryFailures} — a saved failure as an exception.
 * </ul>
 *
 * <p>Thread rules: the model types are immutable; the helpers are stateless; clients are
 * thread-safe (see {@link io.transit.flight.nativequery.NativeQueryClient}).
 */
package io.transit.flight.nativequery;
