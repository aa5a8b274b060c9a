/**
 * The byte forms and primitives every signature and digest in the gateway is built on.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.crypto.Ed25519} — seed keypairs, deterministic signatures,
 *       verification with canonical S.
 *   <li>{@link io.transit.flight.crypto.SignaturePool} — independent signature operations run
 *       by the caller and a few helper threads together.
 *   <li>{@link io.transit.flight.crypto.Digests} — SHA-256 and the domain-separated form
 *       {@code SHA-256(domain ‖ 0x00 ‖ bytes)}.
 *   <li>{@link io.transit.flight.crypto.DeterministicProto} — the deterministic protobuf bytes
 *       that digests and signatures over messages cover.
 *   <li>{@link io.transit.flight.crypto.DeclarationFingerprint} — the Table source declaration
 *       fingerprint shared by tickets, admission and the native engine.
 * </ul>
 *
 * <p>Thread rules: every class here is stateless or immutable and may be called from any thread,
 * except {@code SignaturePool}, which owns its helper threads (its class documentation says who
 * writes and reads what) and is closed by its owner. {@code Ed25519} keeps one engine per calling
 * thread. Returned byte arrays are fresh and owned by the caller.
 */
package io.transit.flight.crypto;
