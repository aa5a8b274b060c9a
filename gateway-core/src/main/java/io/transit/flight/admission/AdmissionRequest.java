package io.transit.flight.admission;

import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.TableDeclaration;
import java.util.Objects;

/**
 * One statement admission as the producer hands it over: the caller's binding facts, its
 * published Table, the budgets, the first native sequence from {@code x-transit-request-sequence}
 * (unsigned), the SQL bytes exactly as received, and the call's deadline on the {@link
 * System#nanoTime()} clock.
 *
 * <p>The SQL array is not copied here; the caller must not change it during {@link
 * AdmissionService#admit}.
 */
public record AdmissionRequest(
    AdmissionSubject caller,
    TableDeclaration table,
    Budgets budgets,
    long firstSequence,
    byte[] sql,
    long deadlineNanos) {

  public AdmissionRequest {
    Objects.requireNonNull(caller, "caller");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(budgets, "budgets");
    Objects.requireNonNull(sql, "sql");
  }

  @Override
  public String toString() {
    // Never the SQL: diagnostics and logs must not carry the full statement.
    return "AdmissionRequest[caller=" + caller
        + ", firstSequence=" + Long.toUnsignedString(firstSequence)
        + ", sqlBytes=" + sql.length + "]";
  }
}
