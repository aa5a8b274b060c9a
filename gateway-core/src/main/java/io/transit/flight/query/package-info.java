/**
 * The query profile: compiling caller SQL to a plan, and adapting retained result cells to Arrow.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.query.QueryCompiler} — {@code compile(sql, table)} to a
 *       {@link io.transit.flight.query.QueryPlan}, and {@code outputSchema(...)} for its Arrow
 *       schema. The supported query set and every failure are in {@code docs/queries.md}.
 *   <li>{@link io.transit.flight.query.CellAdapter} — one verified segment to a plain int64
 *       {@code VectorSchemaRoot} owned by the caller.
 *   <li>{@link io.transit.flight.query.CellSegmentWriter} — encodes a segment in the
 *       {@link io.transit.flight.query.CellFormat}.
 * </ul>
 *
 * <p>Threads: every entry point is a stateless static method that runs wholly on the calling
 * thread; nothing here is shared between calls. Buffers live in the allocator the caller passes.
 */
package io.transit.flight.query;
