/**
 * The embedded native query system: the default {@link
 * io.transit.flight.nativequery.NativeQueryClient}, running in the gateway's process.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.nativequery.embedded.EmbeddedEngine} — open, send, await, read,
 *       release, reload rights, close.
 *   <li>{@link io.transit.flight.nativequery.embedded.EngineOptions}, {@link
 *       io.transit.flight.nativequery.embedded.DuckSettings} and {@link
 *       io.transit.flight.nativequery.embedded.CommandFaults} — settings, DuckDB's resources and
 *       the unknown-outcome fault hook.
 *   <li>{@link io.transit.flight.nativequery.embedded.PlanCache} — the engine's compiler (a
 *       bounded plan cache over the query compiler), which the gateway asks through {@code
 *       NativeQueryClient.planner()}.
 *   <li>{@link io.transit.flight.nativequery.embedded.DemoData} — the generated demo Tables.
 * </ul>
 *
 * <p>Inside: {@code CommandProcessor} and {@code UploadValidator} decide commands in one {@code
 * JournalStore} transaction (the interface; {@code SqliteJournal}, or the shared {@code
 * nativequery.postgres.PostgresJournal}); {@code QueryRunner}
 * executes plans translated by {@code PlanTranslator} on the Tables {@code DuckTables} publishes as
 * scans of their files (checked by {@code FileSchemaCheck}, CSV/Arrow through {@code
 * ParquetCopies}, guarded by each file's {@code FileIdentity} before and after every scan), cutting
 * rows into segments with {@code ResultWriter} and {@code
 * io.transit.flight.cells.CellSegmentBuilder} and storing a small result in the journal with its
 * manifest (one durable commit) or a larger one in the {@code SegmentStore} (the interface; {@code
 * LocalSegmentStore}, a directory, by default, or {@code S3SegmentStore}, an S3-API bucket, chosen
 * by {@link io.transit.flight.nativequery.embedded.SegmentSettings}); {@code ResultReader} serves
 * reads under {@code RightsRegistry}'s current rights; {@code RequesterCheck} is the
 * source/requester check a submit makes, which {@code EmbeddedEngine.checkAccess} also answers
 * before the gateway discloses anything. {@code Leases} claims, renews and takes over the
 * execution leases that let several engines share one journal (the attempt fences a finish).
 * {@code SignatureVerdicts} starts the signature checks of an announced chain's later commands and
 * of a sealed bundle's proof ahead of the commands that need them. {@code JournalRights} keeps
 * the deployment's rights versions in the journal for the gateway.
 *
 * <p>Thread rules: every public method of the engine may be called from any thread. The journal
 * runs each transaction whole (SQLite: on one monitor; PostgreSQL: on a pooled connection of its
 * own, one principal's admissions serialized on its row lock), durable or deferred
 * (docs/admission.md §10). Queries run on the engine's bounded
 * execution pool, one query per task, each with its own child allocator and DuckDB connection;
 * nothing a runner allocates outlives its task. Lease renewals run on the {@code
 * native-lease-renew} thread and takeover scans on {@code native-lease-scan}. Rights are swapped
 * atomically as a whole. Proof verdicts are
 * computed on the engine's {@code native-verify-N} helpers and taken by the submit's sending thread.
 */
package io.transit.flight.nativequery.embedded;
