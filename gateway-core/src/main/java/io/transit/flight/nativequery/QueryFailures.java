package io.transit.flight.nativequery;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.QueryStatus;

/**
 * Turns a saved query's terminal failure into the exception callers see, keeping its stored code,
 * stage, namespace and exact budget amounts. Stateless.
 */
public final class QueryFailures {
  private QueryFailures() {}

  /** The failure a {@code FAILED} status presents as; the status must be {@code FAILED}. */
  public static GatewayException toException(QueryStatus status) {
    if (status.getState() != QueryStatus.State.FAILED) {
      throw new IllegalArgumentException("status: " + status.getState() + " (expected: FAILED)");
    }
    QueryCode code = QueryCode.fromCode(status.getCode());
    GatewayException e =
        GatewayException.of(code.cause(), status.getCode(), status.getMessage())
            .with("stage", status.getStage())
            .with("namespace", Long.toUnsignedString(status.getNamespace()))
            .with("correlation", Long.toUnsignedString(status.getCorrelation()));
    if (code == QueryCode.BUDGET_EXHAUSTED) {
      e = e.with("limit", Long.toUnsignedString(status.getLimit()))
          .with("required", Long.toUnsignedString(status.getRequired()));
    }
    if (!status.getColumn().isEmpty()) {
      e = e.with("column", status.getColumn());
    }
    return e;
  }
}
