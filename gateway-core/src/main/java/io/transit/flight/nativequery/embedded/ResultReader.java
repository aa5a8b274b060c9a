package io.transit.flight.nativequery.embedded;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.QueryFailures;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import java.io.IOException;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Optional;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Reads saved queries and retained results for a caller, re-checking the principal's current
 * rights on every call: the inspect right for statuses and manifests, the entry-read right on the
 * result's source for segments (independently of inspect). A released result fails closed with
 * RETIRED; a missing or altered stored file is EVIDENCE, never an empty result; a store that does
 * not answer is UNAVAILABLE {@code query.segment_store_unavailable}. A small result's segments
 * come from the journal ({@link JournalStore#inlineSegment}), read in the same transaction as the
 * query row, else from the segment store; the caller digests either against the manifest before
 * conversion. Any thread.
 */
final class ResultReader {
  /** A query row and, when it holds one, the inline segment asked for: one journal snapshot. */
  private record Found(JournalStore.SavedQuery saved, Optional<byte[]> inline) {}

  /** A segment that passed every check: its reference and its inline bytes, if inline. */
  private record Readable(SegmentRef ref, Optional<byte[]> inline) {}

  private final JournalStore journal;
  private final RightsRegistry rights;
  private final SegmentStore segments;
  private final JournalUnavailable unavailable;

  ResultReader(JournalStore journal, RightsRegistry rights, SegmentStore segments,
      JournalUnavailable unavailable) {
    this.journal = journal;
    this.rights = rights;
    this.segments = segments;
    this.unavailable = unavailable;
  }

  QueryStatus status(ReadAccess access, long correlation) {
    return inspected(access, correlation).status();
  }

  byte[] manifest(ReadAccess access, long correlation) {
    JournalStore.SavedQuery q = inspected(access, correlation);
    ResultManifest m = retained(q);
    checkIdentity(access, m);
    return q.manifest().clone();
  }

  byte[] segment(ReadAccess access, long correlation, int index, long maxBytes) {
    Readable readable = readableSegment(access, correlation, index, maxBytes);
    SegmentRef ref = readable.ref();
    Optional<byte[]> bytes = readable.inline();
    try {
      if (bytes.isEmpty()) {
        bytes = segments.read(ref.getSha256().toByteArray(), ref.getBytes());
      }
    } catch (SegmentStore.WrongSize e) {
      throw wrongSize(index);
    } catch (SegmentStore.Unavailable e) {
      throw unavailable(e, index);
    } catch (IOException e) {
      throw unreadable(e);
    }
    if (bytes.isEmpty()) {
      throw missing(access, correlation, index);
    }
    if (bytes.get().length != ref.getBytes()) {
      throw wrongSize(index);
    }
    return bytes.get();
  }

  /** {@link #segment(ReadAccess, long, int, long)} read straight into a buffer the caller owns. */
  ArrowBuf segment(
      ReadAccess access, long correlation, int index, long maxBytes, BufferAllocator allocator) {
    Readable readable = readableSegment(access, correlation, index, maxBytes);
    SegmentRef ref = readable.ref();
    if (readable.inline().isPresent()) {
      byte[] bytes = readable.inline().get();
      if (bytes.length != ref.getBytes()) {
        throw wrongSize(index);
      }
      ArrowBuf buf = allocator.buffer(bytes.length);
      buf.setBytes(0, bytes);
      buf.writerIndex(bytes.length);
      return buf;
    }
    try {
      return segments.read(ref.getSha256().toByteArray(), ref.getBytes(), allocator)
          .orElseThrow(() -> missing(access, correlation, index));
    } catch (SegmentStore.WrongSize e) {
      throw wrongSize(index);
    } catch (SegmentStore.Unavailable e) {
      throw unavailable(e, index);
    } catch (IOException e) {
      throw unreadable(e);
    }
  }

  /** The checks of every bounded read: current rights, ownership, retention, index, size bound. */
  private Readable readableSegment(
      ReadAccess access, long correlation, int index, long maxBytes) {
    PrincipalRights r = rights.require(access.principal());
    Found found = owned(access, correlation, index);
    JournalStore.SavedQuery q = found.saved();
    ResultManifest m = retained(q);
    checkIdentity(access, m);
    if (!r.mayRead(m.getSource())) {
      throw RightsRegistry.denied("the principal may no longer read source "
          + Long.toUnsignedString(m.getSource()));
    }
    if (index < 0 || index >= m.getSegmentsCount()) {
      throw GatewayException.of(Cause.INVALID_CALLER_FIELD, "query.segment_index",
              "segment index " + index + " (expected: 0.." + (m.getSegmentsCount() - 1) + ")")
          .with("segments", m.getSegmentsCount());
    }
    SegmentRef ref = m.getSegments(index);
    if (Long.compareUnsigned(ref.getBytes(), maxBytes) > 0) {
      throw ResultWriter.exhausted(
          "the segment exceeds the read bound", "segment_read_bytes", maxBytes, ref.getBytes());
    }
    return new Readable(ref, found.inline());
  }

  /**
   * The store did not answer: nothing is known about the segment, so this is not evidence of loss.
   * The result stays retained; the read may be tried again (the same ticket, or GetFlightInfo with
   * the same sequence and SQL for a fresh one).
   */
  private static GatewayException unavailable(SegmentStore.Unavailable e, int index) {
    return QueryCode.SEGMENT_STORE_UNAVAILABLE
        .failure("the retained segment store is unavailable", e)
        .withOutcome(Outcome.INCOMPLETE)
        .with("segment", index)
        .with("reason", e.reason);
  }

  private static GatewayException unreadable(IOException e) {
    return QueryCode.EVIDENCE.failure("the retained segment cannot be read", e);
  }

  /**
   * A missing file of a result released after the read's first check (the retention sweep then
   * removes it) is RETIRED, as the release says; of a result still retained, EVIDENCE.
   */
  private GatewayException missing(ReadAccess access, long correlation, int index) {
    retained(owned(access, correlation));
    return QueryCode.EVIDENCE.failure("the retained segment file is missing")
        .with("segment", index);
  }

  private static GatewayException wrongSize(int index) {
    return QueryCode.EVIDENCE.failure("the retained segment file has the wrong size")
        .with("segment", index);
  }

  private JournalStore.SavedQuery inspected(ReadAccess access, long correlation) {
    if (!rights.require(access.principal()).canInspect()) {
      throw RightsRegistry.denied("the principal may not inspect queries");
    }
    return owned(access, correlation);
  }

  private JournalStore.SavedQuery owned(ReadAccess access, long correlation) {
    return owned(access, correlation, -1).saved();
  }

  /** The query row and, for {@code index >= 0}, its inline segment there, in one transaction. */
  private Found owned(ReadAccess access, long correlation, int index) {
    Optional<JournalStore.SavedQuery> q;
    Optional<byte[]> inline;
    try {
      Found read = journal.transaction(() -> {
        Optional<JournalStore.SavedQuery> saved = journal.query(correlation);
        return new Found(saved.orElse(null), saved.isPresent() && index >= 0
            ? journal.inlineSegment(correlation, index) : Optional.empty());
      });
      q = Optional.ofNullable(read.saved());
      inline = read.inline();
    } catch (SQLException e) {
      throw unavailable.of("the native journal cannot be read", e);
    }
    // Another principal's query and an unknown correlation look the same: no existence oracle.
    if (q.isEmpty() || q.get().status().getPrincipal() != access.principal()) {
      throw QueryCode.UNKNOWN_RESULT.failure("no such query for this principal");
    }
    return new Found(q.get(), inline);
  }

  private static ResultManifest retained(JournalStore.SavedQuery q) {
    if (q.released()) {
      throw QueryCode.RETIRED.failure("the retained result was released")
          .with(Fact.unsigned("correlation", q.status().getCorrelation()));
    }
    switch (q.status().getState()) {
      case SUCCEEDED -> { }
      case FAILED -> throw QueryFailures.toException(q.status());
      default -> throw GatewayException.of(Cause.PRECONDITION, "query.not_finished",
          "the query has not finished");
    }
    if (q.manifest() == null || !Arrays.equals(Digests.sha256(q.manifest()),
        q.status().getManifestSha256().toByteArray())) {
      throw QueryCode.EVIDENCE.failure("the retained manifest does not match its digest");
    }
    try {
      return ResultManifest.parseFrom(q.manifest());
    } catch (InvalidProtocolBufferException e) {
      throw QueryCode.EVIDENCE.failure("the retained manifest does not parse");
    }
  }

  private static void checkIdentity(ReadAccess access, ResultManifest m) {
    if (access.source() != m.getSource() || access.hasRole() != m.getHasRole()
        || access.role() != m.getRole()) {
      throw RightsRegistry.denied("the result belongs to another source or role");
    }
  }
}
