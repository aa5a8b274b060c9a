package io.transit.flight.server.sql;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import io.transit.flight.query.CellAdapter;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.ticket.StatementReference;
import java.security.MessageDigest;
import java.util.Arrays;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Produces one statement result stream on a T_caller worker: reads the retained manifest and its
 * ordered segments through the public query client, verifies every digest on the captured bytes
 * before Arrow reads them, converts cells to int64, and hands each batch to the outbound handler
 * (ownership of each batch root passes to the channel). Coverage (segment count, rows, ordered
 * digests, manifest identity) is checked before the stream completes.
 *
 * <p>At every bounded read the caller's current authorization is re-checked — binding still
 * current, entry-read right, ticket expiry — so a revocation after a returned batch ends the stream
 * with an error, never with a completed (shortened) result.
 */
final class ResultStreamer {
  private final GatewayState state;

  ResultStreamer(GatewayState state) {
    this.state = state;
  }

  /**
   * Runs on T_caller inside {@link io.transit.flight.channel.FlightOutboundHandler#produce}, which
   * completes the stream when this returns and errors it with whatever this throws.
   */
  void stream(FlightServerChannel channel, CallerBinding caller, StatementReference ref,
      long expiryMillis) {
    ReadAccess access = state.readAccessOf(caller);
    state.recheck(caller, expiryMillis);
    byte[] manifestBytes = state.nativeClient().readManifest(access, ref.correlation());
    if (!MessageDigest.isEqual(Digests.sha256(manifestBytes), ref.manifestSha256())) {
      throw evidence("retained manifest does not match the ticket");
    }
    ResultManifest manifest = parse(manifestBytes);
    checkIdentity(manifest, caller, ref);
    Schema schema = QueryCompiler.outputSchema(manifest.getColumnsList());
    long rows = 0;
    int sent = 0;
    ResponseBudget budget = new ResponseBudget(state.limits().maxResponseBytesPerStream());
    for (int i = 0; i < manifest.getSegmentsCount(); i++) {
      SegmentRef seg = manifest.getSegments(i);
      CallerBinding current = state.recheck(caller, expiryMillis);
      byte[] bytes = state.nativeClient().readSegment(
          state.readAccessOf(current), ref.correlation(), i, state.limits().maxSegmentBytes());
      if (bytes.length != seg.getBytes()
          || !MessageDigest.isEqual(Digests.sha256(bytes), seg.getSha256().toByteArray())) {
        throw evidence("segment " + i + " does not match its digest").with("segment", i);
      }
      VectorSchemaRoot batch = adapt(bytes, schema, rows, channel);
      if (batch.getRowCount() != seg.getRows()) {
        long got = batch.getRowCount();
        batch.close();
        throw evidence("segment " + i + " row count differs from the manifest")
            .with("segment", i).with("expected_rows", seg.getRows()).with("rows", got);
      }
      rows += seg.getRows();
      budget.charge(batch);
      state.handler().sendResponseBatch(channel, batch);
      sent++;
    }
    if (sent != manifest.getSegmentsCount() || rows != manifest.getTotalRows()) {
      throw evidence("coverage check failed").with("segments", sent).with("rows", rows);
    }
    if (sent == 0) {
      // An empty result still carries its schema so clients do not wait for one.
      state.handler().sendResponseBatch(channel, VectorSchemaRoot.create(schema, channel.allocator()));
    }
    state.recheck(caller, expiryMillis);
  }

  /**
   * Converts one segment. An allocator limit (CellAdapter's {@code flight.allocation},
   * UNAVAILABLE as the profile maps allocation failure) is given both configured limits.
   */
  private VectorSchemaRoot adapt(byte[] bytes, Schema schema, long firstRow,
      FlightServerChannel channel) {
    try {
      return CellAdapter.adapt(bytes, schema, firstRow, channel.allocator());
    } catch (GatewayException e) {
      if ("flight.allocation".equals(e.code())) {
        throw e.with("stream_limit", Long.toString(channel.allocator().getLimit()))
            .with("root_limit", Long.toString(state.allocator().getLimit()))
            .with("segment_bytes", Long.toString(bytes.length));
      }
      throw e;
    }
  }

  private static ResultManifest parse(byte[] bytes) {
    try {
      return ResultManifest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new GatewayException(Cause.EVIDENCE, "query.evidence", "retained manifest is unreadable", e);
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

  private static GatewayException evidence(String message) {
    return GatewayException.of(Cause.EVIDENCE, "query.evidence", message);
  }
}
