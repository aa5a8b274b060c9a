package io.transit.flight.server.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.GrpcMessage;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.diagnostic.Recovery;
import io.transit.flight.diagnostic.Stage;
import java.util.List;
import org.junit.jupiter.api.Test;

class NextSequenceHintTest {
  private static final long LAST = -1L; // 2^64-1, the longest decimal

  @Test
  void missingSequenceNamesTheNextOneInMessageAndFact() {
    GatewayException missing = failureOf(() -> SequenceHeader.parse(List.of()));
    GatewayException told = NextSequenceHint.tell(missing, () -> 17L);
    assertEquals("sequence.missing", told.code());
    assertEquals(Cause.INVALID_SEQUENCE, told.kind());
    assertTrue(told.getMessage().endsWith("; next sequence 17"), told.getMessage());
    assertEquals(Fact.unsigned("next_sequence", 17L), told.facts().get("next_sequence"));
  }

  @Test
  void conflictKeepsItsFactsStageAndIdentity() {
    Identity identity = new Identity(40L, null, 40L, 41L);
    GatewayException conflict =
        QueryCode.NAMESPACE_CONFLICT.failure("different command bytes at a used native sequence")
        .with(Fact.unsigned("sequence", 41L))
        .at(Stage.ADMISSION)
        .withIdentity(identity);
    GatewayException told = NextSequenceHint.tell(conflict, () -> LAST);
    assertEquals("different command bytes at a used native sequence; next sequence "
        + Long.toUnsignedString(LAST), told.getMessage());
    assertEquals(List.of("sequence", "next_sequence"), List.copyOf(told.facts().keySet()));
    assertEquals("18446744073709551615", ((Fact) told.facts().get("next_sequence")).value());
    assertEquals(Stage.ADMISSION, told.stage());
    assertEquals(identity, told.identity());
    assertEquals(conflict.outcome(), told.outcome());
  }

  @Test
  void everyHintedMessageFitsTheGrpcMessageBoundUntruncated() {
    List<GatewayException> longest = List.of(
        failureOf(() -> SequenceHeader.parse(List.of())),
        QueryCode.NAMESPACE_CONFLICT.failure(
            "the sequence is below the principal's first native sequence"),
        QueryCode.NAMESPACE_CONFLICT.failure("different command bytes at a used native sequence"),
        QueryCode.NAMESPACE_CONFLICT.failure("the namespace is already used"),
        QueryCode.HISTORY_PRUNED.failure("the record of this used sequence was pruned"));
    for (GatewayException failure : longest) {
      GatewayException told = NextSequenceHint.tell(failure, () -> LAST);
      String wire = GrpcMessage.of(told.code(), told.getMessage());
      assertTrue(wire.length() <= GrpcMessage.MAX_BYTES, wire);
      assertFalse(wire.contains(GrpcMessage.TRUNCATION_MARKER), wire);
      assertTrue(wire.endsWith("; next sequence 18446744073709551615"), wire);
    }
  }

  @Test
  void aRecordedFailureGetsTheFactAndTheMessageSuffixOnlyWhileItFitsWhole() {
    GatewayException recorded = QueryCode.BUDGET_EXHAUSTED
        .failure("the result exceeds max_result_rows")
        .withOutcome(Outcome.FAILED)
        .withActions(Recovery.afterRecord(Cause.BUDGET_EXHAUSTED));
    GatewayException told = NextSequenceHint.tell(recorded, () -> 8L);
    assertEquals("the result exceeds max_result_rows; next sequence 8", told.getMessage());
    assertEquals(Fact.unsigned("next_sequence", 8L), told.facts().get("next_sequence"));
    assertEquals(Outcome.FAILED, told.outcome());

    GatewayException wordy = QueryCode.INTERNAL.failure("x".repeat(100))
        .withOutcome(Outcome.FAILED)
        .withActions(Recovery.afterRecord(Cause.INTERNAL));
    GatewayException toldWordy = NextSequenceHint.tell(wordy, () -> LAST);
    assertEquals("x".repeat(100), toldWordy.getMessage(), "no suffix a bound would cut");
    assertEquals(Fact.unsigned("next_sequence", LAST), toldWordy.facts().get("next_sequence"));

    // A recorded access rejection (a stale credential epoch at submit) says nothing more.
    GatewayException denied = GatewayException.of(Cause.ACCESS_DENIED, "query.access_denied",
        "the credential epoch is stale").withActions(Recovery.afterRecord(Cause.ACCESS_DENIED));
    assertSame(denied, NextSequenceHint.tell(denied, () -> 8L));
  }

  @Test
  void otherFailuresAndUnreadableSequencesLeaveTheFailureAlone() {
    GatewayException repeated = failureOf(() -> SequenceHeader.parse(List.of("1", "1")));
    assertSame(repeated, NextSequenceHint.tell(repeated, () -> 5L));
    GatewayException gap = QueryCode.SEQUENCE_GAP.failure("sequence 9 is ahead; expected 5");
    assertSame(gap, NextSequenceHint.tell(gap, () -> 5L));
    GatewayException missing = failureOf(() -> SequenceHeader.parse(List.of()));
    assertSame(missing, NextSequenceHint.tell(missing, () -> {
      throw new IllegalStateException("journal unavailable");
    }));
  }

  private static GatewayException failureOf(Runnable r) {
    try {
      r.run();
    } catch (GatewayException e) {
      return e;
    }
    throw new AssertionError("no failure");
  }
}
