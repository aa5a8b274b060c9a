package io.transit.flight.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.UnknownFieldSet;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The Table source declaration fingerprint: bytes, sensitivity and unknown-field refusal. */
class DeclarationFingerprintTest {

  private static TableDeclaration table() {
    return TableDeclaration.newBuilder()
        .setCatalog("transit")
        .setDbSchema("demo")
        .setTable("trips")
        .setOwner("owner-1")
        .setObjectId(0xFEDCBA9876543210L)
        .setMetadataRef("meta@1")
        .addColumns(
            ColumnDeclaration.newBuilder().setName("id").setLogicalType("INT64").setNullable(false))
        .addColumns(
            ColumnDeclaration.newBuilder().setName("n").setLogicalType("INT64").setNullable(true))
        .setSource(77)
        .build();
  }

  @Test
  void fingerprintIsSha256OfTheDeterministicSerialization() {
    byte[] serialized = DeterministicProto.bytes(table());
    // No maps in the message: deterministic bytes equal the ordinary field-order encoding.
    assertArrayEquals(table().toByteArray(), serialized);
    assertArrayEquals(Digests.sha256(serialized), DeclarationFingerprint.of(table()));
    assertEquals(32, DeclarationFingerprint.of(table()).length);
    // The encoding starts with field 1 (catalog): tag 0x0a, length 7, "transit".
    assertEquals("0a077472616e736974", HexFormat.of().formatHex(serialized, 0, 9));
  }

  @Test
  void everyCommittedPartChangesTheFingerprint() {
    TableDeclaration base = table();
    List<TableDeclaration> variants =
        List.of(
            base,
            base.toBuilder().setCatalog("other").build(),
            base.toBuilder().setDbSchema("other").build(),
            base.toBuilder().setTable("other").build(),
            base.toBuilder().setOwner("other").build(),
            base.toBuilder().setObjectId(1).build(),
            base.toBuilder().setMetadataRef("meta@2").build(),
            base.toBuilder().setColumns(1, base.getColumns(1).toBuilder().setName("m")).build(),
            base.toBuilder()
                .setColumns(1, base.getColumns(1).toBuilder().setLogicalType("UINT64"))
                .build(),
            base.toBuilder().setColumns(1, base.getColumns(1).toBuilder().setNullable(false))
                .build(),
            base.toBuilder().removeColumns(1).build(),
            base.toBuilder().setSource(78).build());
    Set<String> fingerprints = new HashSet<>();
    for (TableDeclaration variant : variants) {
      fingerprints.add(Digests.hex(DeclarationFingerprint.of(variant)));
    }
    assertEquals(variants.size(), fingerprints.size());
  }

  @Test
  void unknownFieldsAreRefused() {
    UnknownFieldSet extra =
        UnknownFieldSet.newBuilder()
            .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(1).build())
            .build();
    assertThrows(
        IllegalArgumentException.class,
        () -> DeclarationFingerprint.of(table().toBuilder().setUnknownFields(extra).build()));
    TableDeclaration badColumn =
        table().toBuilder()
            .setColumns(0, table().getColumns(0).toBuilder().setUnknownFields(extra))
            .build();
    assertThrows(IllegalArgumentException.class, () -> DeclarationFingerprint.of(badColumn));
  }
}
