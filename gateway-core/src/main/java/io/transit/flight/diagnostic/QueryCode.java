package io.transit.flight.diagnostic;

/**
 * The {@code query.<code>} values a saved query or a native command can end with, and the cause
 * (hence gRPC status) each presents as at the caller boundary. Stored in the journal by name, so
 * names never change meaning.
 *
 * <p>A failure built by {@link #failure} carries its entry ({@link GatewayException#queryCode()}),
 * so the gateway classifies the engine's failures by type, never by comparing code strings; a
 * code that arrives as a string (a recorded outcome, a remote engine's reply) becomes an entry
 * once, through {@link #fromCode}.
 */
public enum QueryCode {
  ARITHMETIC_OVERFLOW("query.arithmetic_overflow", Cause.ARITHMETIC_OVERFLOW),
  BUDGET_EXHAUSTED("query.budget_exhausted", Cause.BUDGET_EXHAUSTED),
  /** The retained segments' file system cannot take the result (limit: usable bytes). */
  DISK_FULL("query.disk_full", Cause.BUDGET_EXHAUSTED),
  /**
   * The retained segments' store could not be reached or failed the request (an object store's
   * network, timeouts, a server error; fact {@code reason}). Recorded when a statement's segments
   * could not be written (outcome failed: the sequence is spent); answered, not recorded, when a
   * retained segment could not be read (outcome incomplete: the result is still retained).
   */
  SEGMENT_STORE_UNAVAILABLE("query.segment_store_unavailable", Cause.TRANSPORT),
  ACCESS_DENIED("query.access_denied", Cause.ACCESS_DENIED),
  SOURCE_UNAVAILABLE("query.source_unavailable", Cause.PRECONDITION),
  /** A published file is no longer what it was when the engine opened (published files are immutable). */
  SOURCE_CHANGED("query.source_changed", Cause.PRECONDITION),
  INVALID_PLAN("query.invalid_plan", Cause.INVALID_REQUEST),
  UNSUPPORTED("query.unsupported", Cause.UNSUPPORTED),
  NAMESPACE_CONFLICT("query.namespace_conflict", Cause.NAMESPACE_CONFLICT),
  SEQUENCE_GAP("query.sequence_gap", Cause.SEQUENCE_GAP),
  INVALID_COMMAND("query.invalid_command", Cause.INVALID_REQUEST),
  RETIRED("query.retired", Cause.RETIRED),
  EVIDENCE("query.evidence", Cause.EVIDENCE),
  CELL_STATE("query.cell_state", Cause.CELL_STATE),
  INTEGER_OUT_OF_RANGE("flight.integer_out_of_range", Cause.INTEGER_OUT_OF_RANGE),
  /**
   * A correlation that names no query of the requesting principal (unknown here, or another
   * principal's: the two are indistinguishable). A gateway holding a verified ticket for that
   * correlation treats it as missing evidence. Never recorded: the engine answers it on reads.
   */
  UNKNOWN_RESULT("query.unknown_result", Cause.ACCESS_DENIED),
  /**
   * A used sequence whose record the history bound forgot (docs/limits.md "What the journal
   * keeps"): the command is refused, never decided again, and what it decided once is no longer
   * known here. Never recorded: the engine answers it on a command's send.
   */
  HISTORY_PRUNED("query.history_pruned", Cause.PRECONDITION),
  INTERNAL("query.internal", Cause.INTERNAL);

  private final String code;
  private final Cause cause;

  QueryCode(String code, Cause cause) {
    this.code = code;
    this.cause = cause;
  }

  public String code() {
    return code;
  }

  public Cause cause() {
    return cause;
  }

  /** The entry for a stored code string; unknown strings are a defect ({@link #INTERNAL}). */
  public static QueryCode fromCode(String code) {
    for (QueryCode q : values()) {
      if (q.code.equals(code)) {
        return q;
      }
    }
    return INTERNAL;
  }

  /** A failure with this code, carrying this entry as its {@link GatewayException#queryCode()}. */
  public GatewayException failure(String message) {
    return new GatewayException(this, message, null);
  }

  /** As {@link #failure(String)}, caused by {@code underlying}. */
  public GatewayException failure(String message, Throwable underlying) {
    return new GatewayException(this, message, underlying);
  }
}
