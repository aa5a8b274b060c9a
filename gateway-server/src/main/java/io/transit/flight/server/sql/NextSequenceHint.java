package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.GrpcMessage;
import io.transit.flight.diagnostic.QueryCode;
import java.util.function.LongSupplier;

/**
 * Tells the authenticated caller its next native sequence when a statement fails for want of a
 * usable one, or fails for good with its sequence spent: {@code sequence.missing}, {@code
 * query.namespace_conflict}, {@code query.history_pruned} and every recorded rejection or failure
 * (action {@code use_next_sequence}) get the number fact {@code next_sequence} and a message
 * ending {@code "; next sequence N"} — the message only while it still fits the grpc-message
 * bound whole, the fact always. ({@code query.sequence_gap} already names it as {@code
 * expected_sequence}.) Only the caller whose credential authenticated the call is told, and only
 * its own sequence; the gateway still never picks a sequence for it.
 *
 * <p>The engine's conflict is recognised by type ({@link GatewayException#queryCode()}). The
 * missing header is recognised by its code, {@link SequenceHeader#MISSING}: the header's four
 * refusals share one cause, the hint is documented per code (docs/status.md), and the code is
 * defined once, where the refusal is raised.
 */
final class NextSequenceHint {
  static final String FACT = "next_sequence";

  private NextSequenceHint() {}

  static boolean applies(GatewayException failure) {
    if (failure.kind() == Cause.ACCESS_DENIED || failure.kind() == Cause.TICKET_SCOPE
        || failure.kind() == Cause.UNAUTHENTICATED) {
      return false; // an access failure tells nothing beyond its code (docs/security.md)
    }
    return failure.queryCode() == QueryCode.NAMESPACE_CONFLICT
        || failure.queryCode() == QueryCode.HISTORY_PRUNED
        || SequenceHeader.MISSING.equals(failure.code())
        || failure.actions().contains(Action.USE_NEXT_SEQUENCE);
  }

  /**
   * {@code failure} with the hint when it {@link #applies}; unchanged when it does not, or when
   * the next sequence cannot be read (the original failure matters more than the hint).
   */
  static GatewayException tell(GatewayException failure, LongSupplier nextSequence) {
    if (!applies(failure)) {
      return failure;
    }
    long next;
    try {
      next = nextSequence.getAsLong();
    } catch (RuntimeException e) {
      return failure;
    }
    // The sequence refusals' longest (the conflict below the first sequence, next = 2^64-1) fits
    // the 128-byte grpc-message bound (NextSequenceHintTest); a recorded failure's own message may
    // not leave room, and a cut suffix would name a wrong number.
    String suffix = "; next sequence " + Long.toUnsignedString(next);
    String hinted = failure.getMessage() + suffix;
    GatewayException told = GrpcMessage.of(failure.code(), hinted).endsWith(suffix)
        ? failure.withMessage(hinted) : failure;
    return told.with(Fact.unsigned(FACT, next));
  }
}
