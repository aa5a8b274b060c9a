/**
 * The retained-cell codec: how a result's cells are stored in a segment and read back.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.cells.CellFormat} — the segment schema: per column a struct of
 *       state and int64 value, and the state codes.
 *   <li>{@link io.transit.flight.cells.CellSegmentBuilder} — the one encoder: the engine retains
 *       results with it; tests and benchmarks encode fixtures with its array form.
 *   <li>{@link io.transit.flight.cells.CellAdapter} — one verified segment to a plain int64
 *       {@code VectorSchemaRoot} owned by the caller (the DoGet side).
 * </ul>
 *
 * <p>Threads: the format and adapter are stateless and run on the calling thread; a builder is
 * confined to the thread that created it. Buffers live in the allocator the caller passes.
 */
package io.transit.flight.cells;
