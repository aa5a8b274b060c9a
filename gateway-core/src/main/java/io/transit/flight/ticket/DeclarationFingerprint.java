package io.transit.flight.ticket;

import com.google.protobuf.CodedOutputStream;
import io.transit.flight.crypto.Digests;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.io.IOException;

/**
 * The Table source declaration fingerprint carried in FTK1 tickets: SHA-256 of the
 * deterministic protobuf serialization of a {@link TableDeclaration}. The declaration commits
 * catalog, schema, name, owner, object id, immutable metadata reference, logical column
 * descriptor and source, so reusing a Table name or changing its declaration changes the
 * fingerprint and a ticket issued before cannot be redirected to it.
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
    return Digests.sha256(serialize(declaration));
  }

  /** Deterministic bytes: fields in number order; the message has no maps to reorder. */
  static byte[] serialize(TableDeclaration declaration) {
    byte[] out = new byte[declaration.getSerializedSize()];
    CodedOutputStream stream = CodedOutputStream.newInstance(out);
    stream.useDeterministicSerialization();
    try {
      declaration.writeTo(stream);
    } catch (IOException e) {
      // A fixed-size array stream only fails if the computed size was wrong: a defect.
      throw new IllegalStateException("table declaration serialization failed", e);
    }
    stream.checkNoSpaceLeft();
    return out;
  }
}
