package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/**
 * Engine failures are classified by type: the {@link QueryCode} a failure was built from survives
 * every copy, and a failure that merely spells the same code string is not taken for it.
 */
class QueryCodeTest {
  @Test
  void failureKeepsItsQueryCodeThroughEveryCopy() {
    GatewayException e = QueryCode.UNKNOWN_RESULT.failure("no such query for this principal")
        .with("reason", "x")
        .at(Stage.OUTPUT)
        .withOutcome(Outcome.UNKNOWN)
        .withIdentity(new Identity(1L, 2L, null, null))
        .withActions(Action.RETRY_LATER)
        .withMessage("another message");
    assertSame(QueryCode.UNKNOWN_RESULT, e.queryCode());
    assertEquals(Cause.ACCESS_DENIED, e.kind());
    assertEquals("query.unknown_result", e.code());
  }

  @Test
  void failureThatOnlySpellsTheCodeIsNotTheEngines() {
    GatewayException spelled =
        GatewayException.of(Cause.ACCESS_DENIED, "query.unknown_result", "looks the same");
    assertNull(spelled.queryCode());
  }

  @Test
  void recordedCodeBecomesItsTypeOnceAtTheSeam() {
    GatewayException e = QueryCode.fromCode("query.namespace_conflict").failure("recorded");
    assertSame(QueryCode.NAMESPACE_CONFLICT, e.queryCode());
    assertEquals(Cause.NAMESPACE_CONFLICT, e.kind());
  }
}
