package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.List;

/**
 * Parses {@code x-transit-request-sequence}: exactly one value, a canonical unsigned decimal (no
 * sign, no leading zeros, no spaces) no larger than 2^64−1. Several values are refused rather than
 * picking one: ADBC appends a value each time a reused statement sets the option.
 */
final class SequenceHeader {
  /** The code of a statement sent without the header (the one NextSequenceHint answers). */
  static final String MISSING = "sequence.missing";

  private SequenceHeader() {}

  /** The first native sequence as unsigned 64-bit bits. */
  static long parse(List<String> values) {
    if (values == null || values.isEmpty()) {
      throw fail(MISSING, "x-transit-request-sequence is required for a statement");
    }
    if (values.size() > 1) {
      throw fail("sequence.repeated",
          "x-transit-request-sequence has " + values.size() + " values (expected: 1)");
    }
    String v = values.get(0);
    boolean digits = !v.isEmpty() && v.length() <= 20;
    for (int i = 0; digits && i < v.length(); i++) {
      digits = v.charAt(i) >= '0' && v.charAt(i) <= '9';
    }
    if (!digits || (v.length() > 1 && v.charAt(0) == '0')) {
      throw fail("sequence.not_canonical",
          "x-transit-request-sequence must be a canonical unsigned decimal");
    }
    try {
      return Long.parseUnsignedLong(v);
    } catch (NumberFormatException e) {
      throw fail("sequence.out_of_range", "x-transit-request-sequence exceeds 18446744073709551615");
    }
  }

  private static GatewayException fail(String code, String message) {
    return GatewayException.of(Cause.INVALID_SEQUENCE, code, message);
  }
}
