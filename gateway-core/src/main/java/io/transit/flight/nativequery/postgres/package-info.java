/**
 * The shared journal of a replicated deployment: the engine's {@link
 * io.transit.flight.nativequery.embedded.JournalStore} in PostgreSQL, so several gateways admit
 * and record against one database.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.nativequery.postgres.PostgresJournal} — open (connect, migrate),
 *       transactions, the per-principal admission lock.
 *   <li>{@link io.transit.flight.nativequery.postgres.PostgresSettings} — where the database is,
 *       the pool's size and the session timeouts.
 *   <li>{@code migration/V*.sql} (resources) — the schema, applied by Flyway at open.
 * </ul>
 *
 * <p>Thread rules: transactions run concurrently on any thread, each on one pooled connection
 * that belongs to it alone until handed back; one principal's admissions serialize on that
 * principal's row in the database, across every replica (docs/deployment.md, "Shared journal").
 */
package io.transit.flight.nativequery.postgres;
