package io.transit.flight.diagnostic;

import java.util.ArrayList;
import java.util.List;

/**
 * The default recovery actions and outcome for each {@link Cause}. A failure may override
 * both ({@link GatewayException#withActions}, {@link GatewayException#withOutcome}) when it
 * knows more, e.g. a deadline hit before any native command was sent. The switches are
 * exhaustive, so a new cause does not compile until it has an entry here and in
 * {@code docs/status.md}.
 */
public final class Recovery {
  private Recovery() {}

  public static List<Action> actions(Cause cause) {
    return switch (cause) {
      case UNAUTHENTICATED -> List.of(Action.REAUTHENTICATE);
      case ARITHMETIC_OVERFLOW, BUDGET_EXHAUSTED, CELL_STATE ->
          List.of(Action.CHANGE_REQUEST, Action.USE_NEXT_SEQUENCE);
      case ADMISSION_BUSY, PRECONDITION, CLOCK -> List.of(Action.RETRY_LATER);
      case ACCESS_DENIED, TICKET_SCOPE -> List.of(Action.CHECK_ACCESS);
      case RETIRED, NAMESPACE_CONFLICT -> List.of(Action.USE_NEXT_SEQUENCE);
      case SEQUENCE_GAP -> List.of(Action.USE_EXPECTED_SEQUENCE);
      case TICKET_EXPIRED, INVALID_TICKET -> List.of(Action.REISSUE_WITH_GETFLIGHTINFO);
      case UNSUPPORTED, INTEGER_OUT_OF_RANGE, INVALID_REQUEST, INVALID_CALLER_FIELD,
          INVALID_SEQUENCE, INVALID_PROTOBUF -> List.of(Action.CHANGE_REQUEST);
      case CANCELLED, DEADLINE, UNKNOWN_OUTCOME, TRANSPORT ->
          List.of(Action.RETRY_SAME_SEQUENCE_AND_SQL);
      case EVIDENCE, INTERNAL -> List.of(Action.CONTACT_OPERATOR);
    };
  }

  /**
   * The actions for a failure the native system recorded — a rejected command, a query's terminal
   * failure — whatever its cause: the sequence is spent, so resending it only replays the record.
   * The cause's actions that still apply (change the request, check access, contact the
   * operator), then {@code use_next_sequence}.
   */
  public static Action[] afterRecord(Cause cause) {
    List<Action> kept = new ArrayList<>();
    for (Action a : actions(cause)) {
      if (a == Action.CHANGE_REQUEST || a == Action.CHECK_ACCESS
          || a == Action.CONTACT_OPERATOR) {
        kept.add(a);
      }
    }
    kept.add(Action.USE_NEXT_SEQUENCE);
    return kept.toArray(Action[]::new);
  }

  /**
   * {@code e} raised once the statement's commands reached the journal (its chain partly or
   * wholly recorded, its query perhaps running): never "not admitted", but unknown to the caller,
   * whom the same sequence and SQL answer once the cause is gone — the cause's own actions first
   * (e.g. check_access), then retry_same_sequence_and_sql.
   */
  public static GatewayException afterAdmission(GatewayException e) {
    List<Action> actions = new ArrayList<>();
    for (Action a : e.actions()) {
      if (a != Action.RETRY_LATER && a != Action.RETRY_SAME_SEQUENCE_AND_SQL) {
        actions.add(a);
      }
    }
    actions.add(Action.RETRY_SAME_SEQUENCE_AND_SQL);
    return e.withOutcome(Outcome.UNKNOWN).withActions(actions.toArray(Action[]::new));
  }

  public static Outcome outcome(Cause cause) {
    return switch (cause) {
      case UNAUTHENTICATED, ADMISSION_BUSY, ACCESS_DENIED, UNSUPPORTED, INVALID_REQUEST,
          INVALID_CALLER_FIELD, INVALID_SEQUENCE, INVALID_TICKET, TICKET_SCOPE, INVALID_PROTOBUF,
          TICKET_EXPIRED, CLOCK -> Outcome.NOT_ADMITTED;
      case SEQUENCE_GAP, NAMESPACE_CONFLICT -> Outcome.REJECTED;
      case ARITHMETIC_OVERFLOW, BUDGET_EXHAUSTED, PRECONDITION, CELL_STATE,
          INTEGER_OUT_OF_RANGE -> Outcome.FAILED;
      case CANCELLED, DEADLINE, UNKNOWN_OUTCOME, TRANSPORT, INTERNAL -> Outcome.UNKNOWN;
      case RETIRED, EVIDENCE -> Outcome.INCOMPLETE;
    };
  }
}
