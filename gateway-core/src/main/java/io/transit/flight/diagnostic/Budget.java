package io.transit.flight.diagnostic;

import java.util.regex.Pattern;

/**
 * One exact budget a failure is about ({@code docs/diagnostic-v1.md}, "Shared-contract terms"):
 * the bound's name, its configured limit and, when measured, what the work required. Amounts are
 * unsigned 64-bit values written as exact decimal strings; shortening never touches them.
 *
 * @param name the bound, e.g. {@code nesting}, {@code max_result_bytes}
 * @param limit the configured limit (u64 bits)
 * @param required what was required (u64 bits), or null when not measured
 */
public record Budget(String name, long limit, Long required) {
  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_.]{0,63}");

  public Budget {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("budget name: " + name + " (expected: [a-z][a-z0-9_.]{0,63})");
    }
  }
}
