package io.transit.flight.admission;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.nio.charset.StandardCharsets;

/** Fixed inputs shared by the admission tests (fixed seeds: everything is reproducible). */
final class Fixtures {
  static final long PRINCIPAL = 4101;
  static final long SERVICE = 77;
  static final long EPOCH = 3;
  static final long ROLE = 9;
  static final long SOURCE = 12;

  private Fixtures() {}

  /** A seed whose byte i is {@code first + i}. */
  static byte[] seed(int first) {
    byte[] seed = new byte[Ed25519.SEED_BYTES];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) (first + i);
    }
    return seed;
  }

  static Ed25519.KeyPair key() {
    return Ed25519.fromSeed(seed(1));
  }

  static AdmissionSubject caller() {
    return new AdmissionSubject(PRINCIPAL, key(), true, ROLE, EPOCH, SERVICE);
  }

  static TableDeclaration table() {
    return TableDeclaration.newBuilder()
        .setCatalog("transit")
        .setDbSchema("public")
        .setTable("trips")
        .setOwner("ops")
        .setObjectId(0x8000_0000_0000_0010L)
        .setMetadataRef("meta/trips@1")
        .addColumns(col("id", "INT64", false))
        .addColumns(col("distance", "INT64", true))
        .addColumns(col("fare", "INT64", true))
        .setSource(SOURCE)
        .build();
  }

  private static ColumnDeclaration col(String name, String type, boolean nullable) {
    return ColumnDeclaration.newBuilder()
        .setName(name)
        .setLogicalType(type)
        .setNullable(nullable)
        .build();
  }

  static Budgets budgets() {
    return Budgets.newBuilder()
        .setMaxResultRows(1000)
        .setMaxResultBytes(1 << 20)
        .setMaxSegmentBytes(1 << 16)
        .setRowsPerSegment(256)
        .build();
  }

  static byte[] sql(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
