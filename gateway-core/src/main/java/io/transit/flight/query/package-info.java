/**
 * The query profile: compiling caller SQL to a plan, and adapting retained result cells to Arrow.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.query.QueryCompiler} — {@code compile(sql, table)} to a
 *       {@link io.transit.flight.query.QueryPlan}, and {@code outputSchema(...)} for its Arrow
 *       schema. The supported query set and every failure are in {@code docs/queries.md}.
 *       {@code SqlGuard} bounds the text before any parse; a
 *       {@link io.transit.flight.query.CompileWatch} lets another thread stop the parse.
 *   <li>{@link io.transit.flight.query.PlanCache} — the bounded, shared cache in front of it.
 *   <li>{@link io.transit.flight.query.CellAdapter} — one verified segment to a plain int64
 *       {@code VectorSchemaRoot} owned by the caller.
 *   <li>{@link io.transit.flight.query.CellSegmentWriter} — encodes a segment in the
 *       {@link io.transit.flight.query.CellFormat}.
 * </ul>
 *
 * <p>Threads: the compiler and adapters are stateless static methods that run wholly on the
 * calling thread. Shared between threads: {@code PlanCache} (its monitor) and a
 * {@code CompileWatch} (any thread abandons, the compiling thread reads); both document their
 * rules. Buffers live in the allocator the caller passes.
 */
package io.transit.flight.query;
