package io.transit.flight.server.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.List;
import org.junit.jupiter.api.Test;

class SequenceHeaderTest {
  @Test
  void acceptsCanonicalUnsignedDecimalsUpToTheLastU64() {
    assertEquals(0L, SequenceHeader.parse(List.of("0")));
    assertEquals(42L, SequenceHeader.parse(List.of("42")));
    assertEquals(-1L, SequenceHeader.parse(List.of("18446744073709551615")));
  }

  @Test
  void refusesEverythingElse() {
    assertCode("sequence.missing", List.of());
    assertCode("sequence.repeated", List.of("1", "1"));
    for (String bad : new String[] {"", "+1", "-1", "01", " 1", "1 ", "1.0", "0x10", "１", "1e3"}) {
      assertCode("sequence.not_canonical", List.of(bad));
    }
    assertCode("sequence.out_of_range", List.of("18446744073709551616"));
    assertCode("sequence.not_canonical", List.of("184467440737095516150"));
  }

  private static void assertCode(String code, List<String> values) {
    GatewayException e = assertThrows(GatewayException.class, () -> SequenceHeader.parse(values));
    assertEquals(code, e.code(), values.toString());
    assertEquals(Cause.INVALID_SEQUENCE, e.kind());
  }
}
