package io.transit.flight.admission;

import java.math.BigInteger;

/** Presents u64 values held in {@code long}s as exact non-negative numbers for diagnostic facts. */
final class Unsigned {
  private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  private Unsigned() {}

  /** The unsigned value of {@code v} (a BigInteger, so JSON facts print it exactly). */
  static BigInteger u64(long v) {
    BigInteger b = BigInteger.valueOf(v);
    return v >= 0 ? b : b.add(TWO_64);
  }
}
