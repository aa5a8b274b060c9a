package io.transit.flight.query;

/**
 * Logical column types of a published Table's row descriptor, and what the profile lets a query
 * do with each. Only types that convert to Arrow int64 may be projected or summed; the rest can
 * only be filtered on (with their own operators) or counted.
 */
public enum LogicalType {
  /** Signed 64-bit integer, stored as DuckDB BIGINT. */
  INT64(true, true, true, true),
  /**
   * Unsigned 64-bit integer, stored as UBIGINT. Filtered and counted, never projected: the profile
   * refuses projecting it before upload (storage support does not imply output conversion).
   */
  UINT64(false, false, true, true),
  /** A nested result cell (state + int64 value) stored as STRUCT(state UTINYINT, value BIGINT). */
  CELL_INT64(true, false, false, false),
  FLOAT64(false, false, true, true),
  UTF8(false, false, true, true),
  BOOL(false, false, false, false),
  DATE(false, false, true, true);

  private final boolean projectable;
  private final boolean summable;
  private final boolean ordered;
  private final boolean filterable;

  LogicalType(boolean projectable, boolean summable, boolean ordered, boolean filterable) {
    this.projectable = projectable;
    this.summable = summable;
    this.ordered = ordered;
    this.filterable = filterable;
  }

  /** Projection converts to Arrow int64 without a checked conversion (the primitive profile). */
  public boolean projectable() {
    return projectable;
  }

  /** Checked int64 SUM is defined. */
  public boolean summable() {
    return summable;
  }

  /** {@code < <= > >= BETWEEN} are defined (equality and IN are defined for every filterable type). */
  public boolean ordered() {
    return ordered;
  }

  /**
   * Comparisons, BETWEEN and IN may name the column. BOOL is false here yet allows
   * {@code =}/{@code <>} and IS [NOT] NULL (no IN, no BETWEEN); CELL_INT64 allows no filter at all.
   */
  public boolean filterable() {
    return filterable;
  }
}
