package io.transit.flight.server.sql;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.query.CellAdapter;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.function.Supplier;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Produces one statement result stream on a T_caller worker: reads the retained manifest and its
 * ordered segments through the public query client, verifies every digest on the captured bytes
 * before Arrow reads them, converts cells to int64, and hands each batch to the outbound handler
 * (ownership of each batch root passes to the channel). Coverage (segment count, rows, ordered
 * digests — {@link Coverage} — and manifest identity) is checked before the stream completes.
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
   *
   * <p>Each segment is read only after the channel's gate admits another batch, and the caller's
   * authorization is re-checked right before that read: a producer parked behind a slow client
   * never holds a batch it read under authorization that has since been revoked, and the check
   * happens once per bounded read however far ahead of the client the producer is allowed to run.
   */
  void stream(FlightServerChannel channel, CallerBinding caller, VerifiedTicket ticket) {
    StatementReference ref = (StatementReference) ticket.reference();
    CallerBinding current = state.recheck(caller, ticket);
    byte[] manifestBytes = reachable(() ->
        state.nativeClient().readManifest(state.readAccessOf(current), ref.correlation()));
    if (!MessageDigest.isEqual(Digests.sha256(manifestBytes), ref.manifestSha256())) {
      throw evidence("retained manifest does not match the ticket");
    }
    ResultManifest manifest = parse(manifestBytes);
    checkIdentity(manifest, caller, ref);
    Schema schema = QueryCompiler.outputSchema(manifest.getColumnsList());
    Coverage coverage = new Coverage(manifest);
    ResponseBudget budget = new ResponseBudget(state.limits().maxResponseBytesPerStream());
    for (int i = 0; i < manifest.getSegmentsCount(); i++) {
      channel.awaitReadyOrThrow();
      CallerBinding now = state.recheck(caller, ticket);
      int index = i;
      byte[] bytes = reachable(() -> state.nativeClient().readSegment(
          state.readAccessOf(now), ref.correlation(), index, state.limits().maxSegmentBytes()));
      coverage.checkBytes(i, bytes);
      VectorSchemaRoot batch;
      try {
        batch = adapt(bytes, schema, coverage.rows(), channel);
      } catch (GatewayException e) {
        throw ofQuery(e, manifest);
      }
      try {
        coverage.checkRows(i, batch.getRowCount());
        budget.charge(batch);
      } catch (GatewayException e) {
        batch.close();
        throw e;
      }
      state.handler().sendResponseBatch(channel, batch);
    }
    coverage.checkComplete();
    if (manifest.getSegmentsCount() == 0) {
      // An empty result still carries its schema so clients do not wait for one.
      state.handler().sendResponseBatch(channel, VectorSchemaRoot.create(schema, channel.allocator()));
    }
    // The last disclosure boundary: a revocation or expiry after the final read still ends the
    // stream with an error rather than a completion.
    state.recheck(caller, ticket);
  }

  /**
   * A valid ticket proves this deployment retained the result for this principal, so a native
   * system that does not know the correlation is missing evidence (another replica's or a lost
   * journal), not an access question: it fails closed as DATA_LOSS, never as an empty result.
   */
  private static byte[] reachable(Supplier<byte[]> read) {
    try {
      return read.get();
    } catch (GatewayException e) {
      if (NativeQueryClient.UNKNOWN_RESULT.equals(e.code())) {
        throw new GatewayException(Cause.EVIDENCE, "query.evidence",
            "the retained result this ticket names is not held by this gateway's native system", e)
            .with("reason", "unknown_result");
      }
      throw e;
    }
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
    return GatewayException.of(Cause.EVIDENCE, "query.evidence", message);
  }
}
