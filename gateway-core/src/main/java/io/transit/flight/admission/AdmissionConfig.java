package io.transit.flight.admission;

/**
 * Admission limits from configuration: how many admissions may be in flight in this gateway and
 * per caller, and the largest upload part a command carries.
 *
 * @param maxInFlight admissions in flight in this gateway (≥ 1)
 * @param maxInFlightPerCaller admissions in flight per caller (1..maxInFlight)
 * @param partBytes bundle bytes per upload part command (1..{@link CommandChain#MAX_PART_BYTES})
 */
public record AdmissionConfig(int maxInFlight, int maxInFlightPerCaller, int partBytes) {
  /** The one default of {@code limits.admission_per_gateway} (docs/limits.md). */
  public static final int DEFAULT_MAX_IN_FLIGHT = 32;
  /** The one default of {@code limits.admission_per_caller}. */
  public static final int DEFAULT_MAX_IN_FLIGHT_PER_CALLER = 4;

  public AdmissionConfig {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight: " + maxInFlight + " (expected: >= 1)");
    }
    if (maxInFlightPerCaller < 1 || maxInFlightPerCaller > maxInFlight) {
      throw new IllegalArgumentException(
          "maxInFlightPerCaller: " + maxInFlightPerCaller + " (expected: 1.." + maxInFlight + ")");
    }
    if (partBytes < 1 || partBytes > CommandChain.MAX_PART_BYTES) {
      throw new IllegalArgumentException(
          "partBytes: " + partBytes + " (expected: 1.." + CommandChain.MAX_PART_BYTES + ")");
    }
  }

  public static AdmissionConfig defaults() {
    return new AdmissionConfig(
        DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_CALLER, CommandChain.DEFAULT_PART_BYTES);
  }
}
