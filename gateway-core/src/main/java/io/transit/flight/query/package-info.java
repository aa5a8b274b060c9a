/**
 * The query profile: compiling caller SQL to a plan.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.query.QueryCompiler} — {@code compile(sql, table)} to a
 *       {@link io.transit.flight.query.QueryPlan}, and {@code outputSchema(...)} for its Arrow
 *       schema. The supported query set and every failure are in {@code docs/queries.md}.
 *       {@code SqlGuard} bounds the text before any parse; a
 *       {@link io.transit.flight.query.CompileWatch} lets another thread stop the parse.
 * </ul>
 *
 * <p>The engine owns compilation (its planner caches plans); the gateway compiles through
 * {@link io.transit.flight.nativequery.NativeQueryClient#planner()}. The retained-cell codec is
 * in {@code io.transit.flight.cells}.
 *
 * <p>Threads: the compiler is stateless static methods that run wholly on the calling thread.
 * A {@code CompileWatch} is shared (any thread abandons, the compiling thread reads) and
 * documents its rules.
 */
package io.transit.flight.query;
