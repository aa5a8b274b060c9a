package io.transit.flight.nativequery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.Recovery;
import io.transit.flight.proto.QueryStatus;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A saved query's failure as callers see it: recorded, so failed, and its sequence spent. */
class QueryFailuresTest {
  private static QueryStatus failed(String code) {
    return QueryStatus.newBuilder().setCorrelation(7).setNamespace(3)
        .setState(QueryStatus.State.FAILED).setCode(code).setStage("execution")
        .setMessage("m").build();
  }

  @Test
  void everyRecordedFailureIsFailedWithItsSequenceSpent() {
    GatewayException internal = QueryFailures.toException(failed("query.internal"));
    assertEquals(Outcome.FAILED, internal.outcome(), "not unknown: the failure is recorded");
    assertEquals(List.of(Action.CONTACT_OPERATOR, Action.USE_NEXT_SEQUENCE), internal.actions());
    GatewayException invalid = QueryFailures.toException(failed("query.invalid_command"));
    assertEquals(Outcome.FAILED, invalid.outcome(), "not not_admitted: the query was accepted");
    assertEquals(List.of(Action.CHANGE_REQUEST, Action.USE_NEXT_SEQUENCE), invalid.actions());
    GatewayException store = QueryFailures.toException(failed("query.segment_store_unavailable"));
    assertEquals(Outcome.FAILED, store.outcome());
    assertEquals(List.of(Action.USE_NEXT_SEQUENCE), store.actions());
    // A published file's invalid UTF-8, met at execution: damaged data, not the default incomplete.
    GatewayException damaged = QueryFailures.toException(failed("query.evidence"));
    assertEquals(Outcome.FAILED, damaged.outcome());
    assertEquals(List.of(Action.CONTACT_OPERATOR, Action.USE_NEXT_SEQUENCE), damaged.actions());
  }

  @Test
  void anAmountTheRecordDidNotMeasureIsLeftOutNotZero() {
    QueryStatus duck = failed("query.budget_exhausted").toBuilder()
        .setBound("memory_limit_bytes").setLimit(1L << 30).build();
    GatewayException e = QueryFailures.toException(duck);
    assertFalse(e.facts().containsKey("required"), e.facts().toString());
    assertEquals(List.of(new Budget("memory_limit_bytes", 1L << 30, null)), e.budgets());
    QueryStatus rows = failed("query.budget_exhausted").toBuilder()
        .setBound("max_result_rows").setLimit(1).setRequired(5).build();
    assertEquals(List.of(new Budget("max_result_rows", 1, 5L)),
        QueryFailures.toException(rows).budgets());
  }

  @Test
  void afterRecordKeepsOnlyTheActionsThatStillApplyAndEndsWithANewSequence() {
    for (Cause c : Cause.values()) {
      List<Action> actions = List.of(Recovery.afterRecord(c));
      assertEquals(Action.USE_NEXT_SEQUENCE, actions.get(actions.size() - 1), c.name());
      for (Action a : actions) {
        assertFalse(a == Action.RETRY_LATER || a == Action.RETRY_SAME_SEQUENCE_AND_SQL
            || a == Action.REISSUE_WITH_GETFLIGHTINFO || a == Action.USE_EXPECTED_SEQUENCE,
            c + ": " + a);
      }
    }
  }
}
