package io.transit.flight.server.sql;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import java.security.MessageDigest;

/**
 * The coverage ledger of one statement stream: the manifest's ordered segment list is the only
 * thing a stream may disclose, segment by segment in order, and the stream may complete only when
 * every listed segment went out with the listed digest, size and row count and the rows add up to
 * the manifest's total. Any mismatch is {@code DATA_LOSS query.evidence}.
 *
 * <p>Confined to the one T_caller worker producing the stream.
 */
final class Coverage {
  private final ResultManifest manifest;
  private int next;
  private long rows;

  /** Refuses a manifest whose segment rows do not add up to its total before anything is sent. */
  Coverage(ResultManifest manifest) {
    this.manifest = manifest;
    long listed = 0;
    for (SegmentRef s : manifest.getSegmentsList()) {
      listed += s.getRows();
      if (s.getSha256().size() != 32 || listed < 0) {
        throw evidence("retained manifest lists an invalid segment");
      }
    }
    if (listed != manifest.getTotalRows()) {
      throw evidence("retained manifest segments do not add up to its row count")
          .with("expected_rows", manifest.getTotalRows()).with("rows", listed);
    }
  }

  /** Rows already covered: the row offset of the next segment. */
  long rows() {
    return rows;
  }

  /**
   * The captured bytes of segment {@code index} — {@code length} bytes whose SHA-256 the caller
   * computed on exactly the bytes Arrow will read — must be the next segment in manifest order and
   * match its size and digest. Checked before Arrow reads them.
   */
  void checkBytes(int index, long length, byte[] sha256) {
    if (index != next || index >= manifest.getSegmentsCount()) {
      throw evidence("segment " + index + " is out of manifest order").with("segment", index);
    }
    SegmentRef seg = manifest.getSegments(index);
    if (length != seg.getBytes()
        || !MessageDigest.isEqual(sha256, seg.getSha256().toByteArray())) {
      throw evidence("segment " + index + " does not match its digest").with("segment", index);
    }
  }

  /** The decoded batch of segment {@code index} must hold the listed rows; then it is covered. */
  void checkRows(int index, long decodedRows) {
    SegmentRef seg = manifest.getSegments(index);
    if (decodedRows != seg.getRows()) {
      throw evidence("segment " + index + " row count differs from the manifest")
          .with("segment", index).with("expected_rows", seg.getRows()).with("rows", decodedRows);
    }
    rows += decodedRows;
    next++;
  }

  /** Before {@code completed()}: every segment covered, in order, and the total reached. */
  void checkComplete() {
    if (next != manifest.getSegmentsCount() || rows != manifest.getTotalRows()) {
      throw evidence("coverage check failed").with("segments", next)
          .with("expected_segments", manifest.getSegmentsCount()).with("rows", rows);
    }
  }

  private static GatewayException evidence(String message) {
    return QueryCode.EVIDENCE.failure(message);
  }
}
