package io.transit.flight.diagnostic;

/**
 * What is known about the caller's request when the failure is reported. Written as the
 * {@code outcome} field of Diagnostic v1; it tells a client whether native work may exist.
 */
public enum Outcome {
  /** No native command was sent on behalf of this call. */
  NOT_ADMITTED("not_admitted"),
  /** The native system recorded a definitive rejection of the command. */
  REJECTED("rejected"),
  /** The native system accepted the query and it reached a terminal failure. */
  FAILED("failed"),
  /** A native command may or may not have been accepted; accepted work continues. */
  UNKNOWN("unknown"),
  /** A result read ended early; the part already delivered is not a complete result. */
  INCOMPLETE("incomplete");

  private final String wireName;

  Outcome(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }
}
