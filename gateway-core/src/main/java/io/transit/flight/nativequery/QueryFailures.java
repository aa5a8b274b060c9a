package io.transit.flight.nativequery;

import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.diagnostic.Recovery;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.proto.QueryStatus;

/**
 * Turns a saved query's terminal failure into the exception callers see, keeping its stored code,
 * stage, namespace and exact budget amounts, and the stored record itself as the original
 * runtime witness. Whatever its cause, the outcome is {@code failed} and the sequence spent
 * ({@link Recovery#afterRecord}). Stateless.
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
    // Every RESOURCE_EXHAUSTED code (budget, disk full) names its bound, and what was needed
    // when it was measured: the record keeps 0 for "not measured" (DuckDB's out-of-memory error
    // says no amount), and no budget is exceeded by needing nothing.
    if (code.cause() == io.transit.flight.diagnostic.Cause.BUDGET_EXHAUSTED) {
      Long required = status.getRequired() != 0 ? status.getRequired() : null;
      e = e.with(Fact.unsigned("limit", status.getLimit()))
          .withBudget(new Budget(budgetName(status), status.getLimit(), required));
      if (required != null) {
        e = e.with(Fact.unsigned("required", required));
      }
    }
    // The cause's defaults may say "unknown, retry the same sequence" (TRANSPORT, INTERNAL) or
    // "not admitted" (INVALID_REQUEST): here the query is recorded as failed, and the same
    // sequence would only answer this again.
    e = e.withOutcome(Outcome.FAILED).withActions(Recovery.afterRecord(code.cause()));
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
