package io.transit.flight.server.sql;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.ByteString;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import org.junit.jupiter.api.Test;

class CoverageTest {
  static final byte[] S0 = {1, 2, 3};
  static final byte[] S1 = {4, 5};

  static SegmentRef ref(byte[] bytes, long rows) {
    return SegmentRef.newBuilder().setRows(rows).setBytes(bytes.length)
        .setSha256(ByteString.copyFrom(Digests.sha256(bytes))).build();
  }

  static ResultManifest manifest(long totalRows, SegmentRef... segments) {
    ResultManifest.Builder b = ResultManifest.newBuilder().setTotalRows(totalRows);
    for (SegmentRef s : segments) {
      b.addSegments(s);
    }
    return b.build();
  }

  static void assertEvidence(org.junit.jupiter.api.function.Executable call) {
    GatewayException e = assertThrows(GatewayException.class, call);
    assertEquals(Cause.EVIDENCE, e.kind());
    assertEquals("query.evidence", e.code());
  }

  @Test
  void theWholeManifestInOrderCompletes() {
    Coverage c = new Coverage(manifest(7, ref(S0, 4), ref(S1, 3)));
    checkBytes(c, 0, S0);
    c.checkRows(0, 4);
    assertEquals(4, c.rows());
    checkBytes(c, 1, S1);
    c.checkRows(1, 3);
    assertDoesNotThrow(c::checkComplete);
  }

  @Test
  void aMissingTailNeverCompletes() {
    Coverage c = new Coverage(manifest(7, ref(S0, 4), ref(S1, 3)));
    checkBytes(c, 0, S0);
    c.checkRows(0, 4);
    assertEvidence(c::checkComplete);
  }

  @Test
  void segmentsOutOfOrderOrWithOtherBytesAreRefused() {
    Coverage c = new Coverage(manifest(7, ref(S0, 4), ref(S1, 3)));
    assertEvidence(() -> checkBytes(c, 1, S1));
    assertEvidence(() -> checkBytes(c, 0, S1));
    assertEvidence(() -> checkBytes(c, 0, new byte[] {1, 2, 4}));
    assertEvidence(() -> checkBytes(c, 2, S0));
  }

  @Test
  void decodedRowsMustMatchTheManifest() {
    Coverage c = new Coverage(manifest(7, ref(S0, 4), ref(S1, 3)));
    checkBytes(c, 0, S0);
    assertEvidence(() -> c.checkRows(0, 5));
  }

  @Test
  void aManifestWhoseSegmentsDoNotAddUpIsRefusedBeforeAnyRead() {
    assertEvidence(() -> new Coverage(manifest(8, ref(S0, 4), ref(S1, 3))));
    assertEvidence(() -> new Coverage(manifest(4, SegmentRef.newBuilder().setRows(4).build())));
  }

  @Test
  void anEmptyResultCompletesOnlyWhenItsManifestIsEmpty() {
    assertDoesNotThrow(new Coverage(manifest(0))::checkComplete);
    assertEvidence(() -> new Coverage(manifest(1)));
  }

  /** The streamer's order: digest the captured bytes, then check them against the ledger. */
  private static void checkBytes(Coverage c, int index, byte[] captured) {
    c.checkBytes(index, captured.length, Digests.sha256(captured));
  }
}
