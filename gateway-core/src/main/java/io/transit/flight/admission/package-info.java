/**
 * Signed sequenced admission of statements into the native query system.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.admission.AdmissionService#admit} — the producer's entry: limiter,
 *       bundle, command chain, send with recorded outcomes, bounded wait for the result.
 *   <li>{@link io.transit.flight.admission.CanonicalBundle} — the deterministic request bundle
 *       with its signed principal proof ({@link io.transit.flight.nativequery.NativeSignatures}
 *       holds the proof and command signature contract the native engine verifies).
 *   <li>{@link io.transit.flight.admission.CommandChain} — begin, parts, seal, submit with
 *       consecutive unsigned sequences.
 *   <li>{@link io.transit.flight.admission.AdmissionLimiter} — non-blocking per-gateway and
 *       per-caller in-flight bounds.
 * </ul>
 *
 * <p>Thread rules: everything here is immutable or thread-safe. {@code admit} blocks the calling
 * RPC thread (native sends, then the query wait, bounded by the call's deadline); the limiter is
 * the only shared mutable state and guards it with one monitor. Sequences, principals, roles,
 * epochs and correlations are unsigned 64-bit values in {@code long}s; diagnostic facts present
 * them as exact non-negative {@link java.math.BigInteger}s. See {@code docs/admission.md}.
 */
package io.transit.flight.admission;
