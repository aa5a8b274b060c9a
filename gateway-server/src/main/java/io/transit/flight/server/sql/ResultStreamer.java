package io.transit.flight.server.sql;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.cells.CellAdapter;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.stream.BatchSender;
import io.transit.flight.server.stream.ResponseBudget;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.function.Supplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Produces one statement result stream on a T_caller worker: reads the retained manifest and its
 * ordered segments through the public query client, verifies every digest on the captured bytes
 * before Arrow reads them, converts cells to int64, and hands each batch to the outbound handler
 * (ownership of each batch root passes to the channel). Coverage (segment count, rows, ordered
 * digests — {@link Coverage} — and manifest identity) is checked before the stream completes.
 *
 * <p>At every bounded read and again at every hand-off the caller's current authorization is
 * re-checked — binding still current, entry-read right, ticket expiry — so a revocation after a
 * returned batch ends the stream with an error, never with a completed (shortened) result.
 *
 * <p>Buffers: each segment is captured straight into the stream's allocator (no heap copy), is
 * digested there, and is owned by {@link #stream} until its reference is closed right after
 * conversion; the converted root shares the segment's memory (its int64 value buffers are the
 * segment's own) and keeps it alive until the channel, which owns the root from the hand-off
 * ({@link BatchSender#send}), closes it once the batch is written. The hand-off returns only
 * then (the gateway's streams have one resident batch), so the next segment is read after the
 * previous batch was freed: the stream's allocator holds at most one decoded batch, the
 * segment's bytes as the allocator accounts them (docs/limits.md).
 *
 * <p>Threads: built on the main thread by {@code GatewayServer}; its fields are final and the
 * objects they name are shared, thread-safe services. {@link #stream} runs on the stream's
 * producer (T_caller), one call per DoGet, and everything it creates (the manifest, the segment
 * buffers, the converted roots until their hand-off, the coverage) is confined to that call.
 */
public final class ResultStreamer {
  private final Authorization authorization;
  private final NativeQueryClient nativeClient;
  private final FlightOutboundHandler handler;
  private final BufferAllocator rootAllocator;
  private final Limits limits;

  /** {@code rootAllocator} is only read, for the limit it names in allocation failures. */
  public ResultStreamer(Authorization authorization, NativeQueryClient nativeClient,
      FlightOutboundHandler handler, BufferAllocator rootAllocator, Limits limits) {
    this.authorization = authorization;
    this.nativeClient = nativeClient;
    this.handler = handler;
    this.rootAllocator = rootAllocator;
    this.limits = limits;
  }

  /**
   * Runs on T_caller inside {@link io.transit.flight.channel.FlightOutboundHandler#produce}, which
   * completes the stream when this returns and errors it with whatever this throws.
   *
   * <p>Each bounded read re-checks the caller's authorization right before it; the converted
   * batch then goes through the stream's {@link BatchSender}, which waits in the channel's
   * readiness gate (so reading, digesting and converting the next segment overlap the write of
   * the previous batch) and checks the budget and authorization once more after that wait, right
   * before the hand-off: a batch built under authorization revoked while the producer was parked
   * is freed, never disclosed.
   */
  void stream(FlightServerChannel channel, CallerBinding caller, VerifiedTicket ticket) {
    StatementReference ref = (StatementReference) ticket.reference();
    Authorization.Grant current = authorization.recheck(caller, ticket);
    byte[] manifestBytes = reachable(() ->
        nativeClient.readManifest(current.readAccess(), ref.correlation()));
    if (!MessageDigest.isEqual(Digests.sha256(manifestBytes), ref.manifestSha256())) {
      throw evidence("retained manifest does not match the ticket");
    }
    ResultManifest manifest = parse(manifestBytes);
    checkIdentity(manifest, caller, ref);
    Schema schema = QueryCompiler.outputSchema(manifest.getColumnsList());
    Coverage coverage = new Coverage(manifest);
    BatchSender sender = new BatchSender(handler, channel,
        new ResponseBudget(limits.maxResponseBytesPerStream()),
        () -> authorization.recheck(caller, ticket));
    try {
      for (int i = 0; i < manifest.getSegmentsCount(); i++) {
        Authorization.Grant now = authorization.recheck(caller, ticket);
        VectorSchemaRoot batch;
        try (ArrowBuf bytes = readSegment(channel, now, ref, manifest, i)) {
          long length = bytes.writerIndex();
          coverage.checkBytes(i, length, Digests.sha256(bytes, length));
          try {
            batch = adapt(bytes, length, schema, coverage.rows(), channel);
          } catch (GatewayException e) {
            throw ofQuery(e, manifest);
          }
        }
        try {
          coverage.checkRows(i, batch.getRowCount());
        } catch (RuntimeException e) {
          batch.close(); // not yet handed to the sender, so still the producer's to free
          throw e;
        }
        // The previous batch was written and freed before this segment was read (send returns
        // only then), while gRPC may still be putting its copy on the wire; only now does the
        // producer park for backpressure, holding this one batch. After the last one nothing is
        // read, so nothing waits for its write.
        if (i == manifest.getSegmentsCount() - 1) {
          sender.sendLast(batch);
        } else {
          sender.send(batch);
        }
      }
      coverage.checkComplete();
      if (manifest.getSegmentsCount() == 0) {
        // An empty result still carries its schema so clients do not wait for one.
        sender.sendLast(VectorSchemaRoot.create(schema, channel.allocator()));
      }
      // The last disclosure boundary: a revocation or expiry after the final read still ends the
      // stream with an error rather than a completion.
      authorization.recheck(caller, ticket);
    } catch (GatewayException e) {
      throw sender.ending(e);
    }
  }

  /**
   * A valid ticket proves this deployment retained the result for this principal, so a native
   * system that does not know the correlation is missing evidence (another replica's or a lost
   * journal), not an access question: it fails closed as DATA_LOSS, never as an empty result.
   */
  private static <T> T reachable(Supplier<T> read) {
    try {
      return read.get();
    } catch (GatewayException e) {
      if (e.queryCode() == QueryCode.UNKNOWN_RESULT) {
        throw QueryCode.EVIDENCE.failure(
            "the retained result this ticket names is not held by this gateway's native system", e)
            .with("reason", "unknown_result");
      }
      throw e;
    }
  }

  /**
   * One bounded read, captured straight into the stream's allocator (the segment is the one
   * resident batch; the converted root keeps using its memory).
   */
  private ArrowBuf readSegment(FlightServerChannel channel, Authorization.Grant now,
      StatementReference ref, ResultManifest manifest, int index) {
    try {
      return reachable(() -> nativeClient.readSegment(now.readAccess(),
          ref.correlation(), index, limits.maxSegmentBytes(), channel.allocator()));
    } catch (OutOfMemoryException e) {
      throw limits(ErrorMapper.allocationFailure(e, "allocation failed while reading a segment"),
          channel, manifest.getSegments(index).getBytes());
    }
  }

  /**
   * Converts one segment. An allocator refusal is classified by its type (UNAVAILABLE {@code
   * flight.allocation}, as the profile maps allocation failure) and given both configured limits.
   */
  private VectorSchemaRoot adapt(ArrowBuf bytes, long length, Schema schema, long firstRow,
      FlightServerChannel channel) {
    try {
      return CellAdapter.adapt(bytes, length, schema, firstRow, channel.allocator());
    } catch (OutOfMemoryException e) {
      throw limits(ErrorMapper.allocationFailure(e, "allocation failed while converting a segment"),
          channel, length);
    }
  }

  /**
   * Names both limits and the segment, as read and as the allocator accounts it: Arrow rounds a
   * request below its chunk size (16 MiB) up to a power of two, so a segment within
   * {@code max_segment_bytes} may still not fit a stream allocator of the same size.
   */
  private GatewayException limits(GatewayException e, FlightServerChannel channel,
      long segmentBytes) {
    return e.with("stream_limit", channel.allocator().getLimit())
        .with("root_limit", rootAllocator.getLimit())
        .with("segment_bytes", segmentBytes)
        .with("segment_accounted_bytes",
            channel.allocator().getRoundingPolicy().getRoundedSize(segmentBytes));
  }

  private static ResultManifest parse(byte[] bytes) {
    try {
      return ResultManifest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw QueryCode.EVIDENCE.failure("retained manifest is unreadable", e);
    }
  }

  /** The manifest must be the one the ticket names, for this principal, role and Table. */
  private static void checkIdentity(ResultManifest m, CallerBinding caller, StatementReference ref) {
    boolean ok = m.getCorrelation() == ref.correlation()
        && m.getPrincipal() == caller.principal()
        && m.getHasRole() == caller.hasRole() && m.getRole() == caller.role()
        && Arrays.equals(m.getDeclarationSha256().toByteArray(), caller.declarationFingerprint())
        && m.getSource() == caller.source() && m.getResource() == caller.resource();
    if (!ok) {
      throw evidence("retained manifest identity does not match the ticket");
    }
  }

  /**
   * A conversion failure of this query's output (cell state, int64 range, IPC evidence) names
   * the stage and the query it belongs to, as terminal failures from the engine do. The caller
   * passed the current-authorization recheck before this segment was read.
   */
  private static GatewayException ofQuery(GatewayException e, ResultManifest m) {
    GatewayException out = e.stage() == null ? e.at(Stage.OUTPUT) : e;
    return out.identity().isEmpty()
        ? out.withIdentity(new Identity(m.getNamespace(), m.getCorrelation(), null, null))
        : out;
  }

  static GatewayException evidence(String message) {
    return QueryCode.EVIDENCE.failure(message);
  }
}
