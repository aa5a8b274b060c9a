package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.server.flight.SequenceHeader;
import java.util.function.LongSupplier;

/**
 * Tells the authenticated caller its next native sequence when a statement fails for want of a
 * usable one: {@code sequence.missing}, {@code query.namespace_conflict} and {@code
 * query.history_pruned} get the number fact {@code next_sequence} and a message ending {@code
 * "; next sequence N"}. ({@code query.sequence_gap} already names it as {@code
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
    return failure.queryCode() == QueryCode.NAMESPACE_CONFLICT
        || failure.queryCode() == QueryCode.HISTORY_PRUNED
        || SequenceHeader.MISSING.equals(failure.code());
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
    // The longest result (the conflict below the first sequence, next = 2^64-1) stays within the
    // 128-byte grpc-message bound: NextSequenceHintTest checks it.
    return failure
        .withMessage(failure.getMessage() + "; next sequence " + Long.toUnsignedString(next))
        .with(Fact.unsigned(FACT, next));
  }
}
