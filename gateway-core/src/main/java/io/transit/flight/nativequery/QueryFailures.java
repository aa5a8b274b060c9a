package io.transit.flight.nativequery;

import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Stage;
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
    String message = status.getMessage().isEmpty() ? "the query failed" : status.getMessage();
    GatewayException e =
        code.failure(message)
            .at(Stage.fromWireName(status.getStage(), Stage.EXECUTION))
            .withIdentity(new Identity(status.getNamespace(), status.getCorrelation(), null, null));
    // Every RESOURCE_EXHAUSTED code (budget, disk full) names its bound and what was needed.
    if (code.cause() == io.transit.flight.diagnostic.Cause.BUDGET_EXHAUSTED) {
      e = e.with(Fact.unsigned("limit", status.getLimit()))
          .with(Fact.unsigned("required", status.getRequired()));
    }
    if (code == QueryCode.SEGMENT_STORE_UNAVAILABLE) {
      // TRANSPORT's defaults say "unknown, retry the same sequence"; here the query is recorded
      // as failed, so the same sequence would only answer this again.
      return e.withOutcome(io.transit.flight.diagnostic.Outcome.FAILED)
          .withActions(io.transit.flight.diagnostic.Action.USE_NEXT_SEQUENCE);
    }
    if (!status.getColumn().isEmpty()) {
      e = e.with("column", status.getColumn());
    }
    return e;
  }
}
