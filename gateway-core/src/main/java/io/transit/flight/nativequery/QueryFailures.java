package io.transit.flight.nativequery;

import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.proto.QueryStatus;

/**
 * Turns a saved query's terminal failure into the exception callers see, keeping its stored code,
 * stage, namespace and exact budget amounts, and the stored record itself as the original
 * runtime witness. Stateless.
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
            .withIdentity(new Identity(status.getNamespace(), status.getCorrelation(), null, null))
            .withWitness(Witness.nativeFailure(
                status.getCode(), status.getStage(), status.getCorrelation()));
    // Every RESOURCE_EXHAUSTED code (budget, disk full) names its bound and what was needed.
    if (code.cause() == io.transit.flight.diagnostic.Cause.BUDGET_EXHAUSTED) {
      e = e.with(Fact.unsigned("limit", status.getLimit()))
          .with(Fact.unsigned("required", status.getRequired()))
          .withBudget(new Budget(budgetName(status), status.getLimit(), status.getRequired()));
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

  /** The bound a stored budget failure names, or its code's when the record names none. */
  private static String budgetName(QueryStatus status) {
    String bound = status.getBound();
    return bound.matches("[a-z][a-z0-9_.]{0,63}") ? bound : status.getCode();
  }
}
