package io.transit.flight.catalog;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/** Encodes finite metadata results as one-batch Arrow IPC streams and reads them back. */
public final class IpcBytes {
  private IpcBytes() {}

  /** One batch as an IPC stream; the caller keeps ownership of {@code root}. */
  public static byte[] write(VectorSchemaRoot root) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
      writer.start();
      writer.writeBatch();
      writer.end();
    } catch (IOException e) {
      throw new GatewayException(Cause.INTERNAL, "catalog.encode", "metadata encoding failed", e);
    }
    return out.toByteArray();
  }

  /**
   * Reads the single batch of {@code bytes} into a new root allocated in {@code allocator};
   * ownership of the returned root passes to the caller. Every intermediate buffer is freed.
   */
  public static VectorSchemaRoot read(byte[] bytes, BufferAllocator allocator) {
    try (ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(bytes), allocator)) {
      VectorSchemaRoot source = reader.getVectorSchemaRoot();
      if (!reader.loadNextBatch()) {
        throw GatewayException.of(Cause.EVIDENCE, "catalog.evidence", "metadata result has no batch");
      }
      VectorSchemaRoot out = VectorSchemaRoot.create(source.getSchema(), allocator);
      try (ArrowRecordBatch batch = new VectorUnloader(source).getRecordBatch()) {
        new org.apache.arrow.vector.VectorLoader(out).load(batch);
      } catch (RuntimeException e) {
        out.close();
        throw e;
      }
      return out;
    } catch (IOException e) {
      throw new GatewayException(Cause.EVIDENCE, "catalog.evidence", "metadata result is unreadable", e);
    }
  }

  /**
   * The row count of the single batch of {@code bytes}, read from the batch's message header
   * alone: no vector is allocated and no body is copied (GetFlightInfo only reports the count).
   */
  public static long rowCount(byte[] bytes) {
    try (ReadChannel in = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(bytes)))) {
      MessageMetadataResult schema = MessageSerializer.readMessage(in);
      if (schema == null || schema.getMessage().headerType() != MessageHeader.Schema) {
        throw GatewayException.of(Cause.EVIDENCE, "catalog.evidence", "metadata result has no schema");
      }
      MessageMetadataResult batch = MessageSerializer.readMessage(in);
      if (batch == null
          || batch.getMessage().headerType() != MessageHeader.RecordBatch) {
        throw GatewayException.of(Cause.EVIDENCE, "catalog.evidence", "metadata result has no batch");
      }
      RecordBatch header = (RecordBatch)
          batch.getMessage().header(new RecordBatch());
      return header.length();
    } catch (IOException e) {
      throw new GatewayException(Cause.EVIDENCE, "catalog.evidence", "metadata result is unreadable", e);
    }
  }

  /** The serialized schema message (with the standard IPC prefix) as GetTables carries it. */
  public static byte[] schemaMessage(Schema schema) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      MessageSerializer.serialize(new WriteChannel(Channels.newChannel(out)), schema);
    } catch (IOException e) {
      throw new GatewayException(Cause.INTERNAL, "catalog.encode", "schema encoding failed", e);
    }
    return out.toByteArray();
  }
}
