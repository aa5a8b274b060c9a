package io.transit.flight.ticket;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.crypto.Digests;
import java.util.HexFormat;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TransitDefinitionTest {

  @Test
  void canonicalEncodingIsLengthPrefixedLittleEndian() {
    byte[] encoding = TransitDefinition.encode("ab", 0x0102030405060708L, 9);
    assertEquals(
        "0200" + "6162" + "0807060504030201" + "0900000000000000" + "0400" + "46544b31",
        HexFormat.of().formatHex(encoding));
    assertArrayEquals(
        Digests.domainSha256("transit.flight.definition.v1", encoding),
        TransitDefinition.of("ab", 0x0102030405060708L, 9).digest());
  }

  @Test
  void everyInputChangesTheDefinition() {
    Set<TransitDefinition> all =
        Set.of(
            TransitDefinition.of("realm", 1, 2),
            TransitDefinition.of("realm2", 1, 2),
            TransitDefinition.of("realm", 3, 2),
            TransitDefinition.of("realm", 1, 3),
            // Length prefixes keep name/id boundaries unambiguous.
            TransitDefinition.of("realm ", 1, 2));
    assertEquals(5, all.size());
    assertEquals(TransitDefinition.of("realm", 1, 2), TransitDefinition.of("realm", 1, 2));
    assertNotEquals(TransitDefinition.of("realm", 1, 2), TransitDefinition.of("Realm", 1, 2));
    assertEquals(32, TransitDefinition.of("realm", 1, 2).digest().length);
    assertEquals("FTK1", TransitDefinition.TICKET_CONTRACT_VERSION);
  }

  @Test
  void realmNameMustBePrintableAscii() {
    for (String bad : new String[] {null, "", "tab\there", "caf\u00e9", "x".repeat(129)}) {
      assertThrows(IllegalArgumentException.class, () -> TransitDefinition.of(bad, 1, 2));
    }
    assertEquals(128, TransitDefinition.of("x".repeat(128), 1, 2).realmName().length());
  }
}
