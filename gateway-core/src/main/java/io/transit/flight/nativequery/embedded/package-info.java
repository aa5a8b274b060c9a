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
 * JournalStore} transaction (the interface; {@code SqliteJournal} today); {@code QueryRunner}
 * executes plans translated by {@code PlanTranslator} on the Tables {@code DuckTables} publishes as
 * views over their files (checked by {@code FileSchemaCheck}, CSV/Arrow through {@code
 * ParquetCopies}, guarded by each file's {@code FileIdentity} before and after every scan), cutting
 * rows into segments with {@code ResultWriter} and {@code
 * io.transit.flight.cells.CellSegmentBuilder} and storing a small result in the journal with its
 * manifest (one durable commit) or a larger one in the {@code SegmentStore} (the interface; {@code
 * LocalSegmentStore}, a directory, today); {@code ResultReader} serves reads under {@code
 * RightsRegistry}'s current rights.
 *
 * <p>Thread rules: every public method of the engine may be called from any thread. The journal
 * runs each transaction whole (SQLite: on one monitor), durable or deferred (docs/admission.md
 * §10). Queries run on the engine's bounded
 * execution pool, one query per task, each with its own child allocator and DuckDB connection;
 * nothing a runner allocates outlives its task. Rights are swapped atomically as a whole.
 */
package io.transit.flight.nativequery.embedded;
