package io.transit.flight.crypto;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import java.io.IOException;

/**
 * Protobuf deterministic serialization: the one byte form every digest and signature over a
 * protobuf message covers (request bundles, principal proofs, native commands, Table
 * declarations, result manifests). For the gateway's messages (proto3, no maps) this writes known
 * fields in field-number order and omits fields holding their default value (0, false, empty
 * bytes/string, unset message); it never depends on time, randomness or the JVM.
 *
 * <p>Stateless and thread-safe.
 */
public final class DeterministicProto {
  private DeterministicProto() {}

  /** The deterministic serialization of {@code message} (a fresh array owned by the caller). */
  public static byte[] bytes(MessageLite message) {
    byte[] out = new byte[message.getSerializedSize()];
    CodedOutputStream stream = CodedOutputStream.newInstance(out);
    stream.useDeterministicSerialization();
    try {
      message.writeTo(stream);
      stream.checkNoSpaceLeft();
    } catch (IOException e) {
      // Writing into an exactly sized array cannot fail unless the message changed underneath.
      throw new IllegalStateException("deterministic serialization failed", e);
    }
    return out;
  }
}
