package io.transit.flight.diagnostic;

/**
 * A recovery action a Diagnostic v1 recommends to the caller. The wire names are part of the
 * contract ({@code docs/diagnostic-v1.md}); a consumer acts only on names it knows.
 */
public enum Action {
  /** Send the same statement again with the same first sequence and the same SQL. */
  RETRY_SAME_SEQUENCE_AND_SQL("retry_same_sequence_and_sql"),
  /** Resend using the exact expected sequence the diagnostic names. */
  USE_EXPECTED_SEQUENCE("use_expected_sequence"),
  /** A new statement must use the caller's explicit next sequence, never a used one. */
  USE_NEXT_SEQUENCE("use_next_sequence"),
  /** Nothing was admitted; the same request may be sent again later. */
  RETRY_LATER("retry_later"),
  /** Obtain a fresh ticket with GetFlightInfo (same sequence and SQL resolve the same query). */
  REISSUE_WITH_GETFLIGHTINFO("reissue_with_getflightinfo"),
  /** Present a valid credential. */
  REAUTHENTICATE("reauthenticate"),
  /** The request itself must change; resending it unchanged fails the same way. */
  CHANGE_REQUEST("change_request"),
  /** The caller's rights or binding must change before a retry can succeed. */
  CHECK_ACCESS("check_access"),
  /** A gateway or evidence defect: an operator must look; no caller action fixes it. */
  CONTACT_OPERATOR("contact_operator");

  private final String wireName;

  Action(String wireName) {
    this.wireName = wireName;
  }

  /** The name written in the {@code actions} array. */
  public String wireName() {
    return wireName;
  }
}
