package io.transit.flight.crypto;

import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;

/**
 * The Table source declaration fingerprint: SHA-256 of the deterministic protobuf serialization
 * ({@link DeterministicProto}) of a {@link TableDeclaration}. FTK1 tickets, the request bundle's
 * {@code declaration_sha256} and the result manifest all carry these 32 bytes, and the native
 * engine recomputes them at submit. The declaration commits catalog, schema, name, owner, object
 * id, immutable metadata reference, logical column descriptor and source, so reusing a Table
 * name or changing its declaration changes the fingerprint and nothing issued before can be
 * redirected to it.
 *
 * <p>Stateless and thread-safe.
 */
public final class DeclarationFingerprint {
  private DeclarationFingerprint() {}

  /**
   * The 32-byte fingerprint of {@code declaration}.
   *
   * @throws IllegalArgumentException if the message carries unknown fields: they would enter
   *     the digest without being part of the declaration any replica can rebuild from config
   */
  public static byte[] of(TableDeclaration declaration) {
    if (!declaration.getUnknownFields().asMap().isEmpty()) {
      throw new IllegalArgumentException("table declaration carries unknown fields");
    }
    for (ColumnDeclaration column : declaration.getColumnsList()) {
      if (!column.getUnknownFields().asMap().isEmpty()) {
        throw new IllegalArgumentException("column declaration carries unknown fields");
      }
    }
    return Digests.sha256(DeterministicProto.bytes(declaration));
  }
}
