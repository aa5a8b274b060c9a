package io.transit.flight.nativequery.embedded;

import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.Digests;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The retention policy's enforcer: releases the oldest retained results past the maximum age or
 * past the maximum total bytes (in the journal, as {@link EmbeddedEngine#release} does), then
 * removes segment files no unreleased manifest names. The journal commits first and files go
 * after it, so a crash in between leaves only unreferenced files, removed by the next sweep.
 *
 * <p>Threads: {@link #sweep} runs on the single {@code native-retention} thread ({@link #start})
 * or, in tests, on the caller. Query runners hold {@link #writing()} (the read side of a fair
 * lock) from their first segment write until their manifest commits; the removal step takes the
 * write side, so it never removes a file a query just wrote (or found already stored) and has not
 * yet named in a committed manifest. It waits at most {@code removalWait} for running queries and
 * otherwise leaves removal to the next sweep. {@link #close} is called once by the engine.
 */
final class Retention implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Retention.class);

  /** What one sweep did. */
  record Swept(int released, int removed) {}

  private final JournalStore journal;
  private final SegmentStore segments;
  private final RetentionPolicy policy;
  private final LongSupplier clock;
  private final Duration removalWait;
  private final ReentrantReadWriteLock writers = new ReentrantReadWriteLock(true);
  private ScheduledExecutorService timer;

  Retention(JournalStore journal, SegmentStore segments, RetentionPolicy policy,
      LongSupplier clock, Duration removalWait) {
    this.journal = journal;
    this.segments = segments;
    this.policy = policy;
    this.clock = clock;
    this.removalWait = removalWait;
  }

  /** Held by a query runner while its segments are not yet named by a committed manifest. */
  Lock writing() {
    return writers.readLock();
  }

  /** Starts the sweeps on one daemon thread. Called once, by the engine's open. */
  synchronized void start() {
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "native-retention");
      t.setDaemon(true);
      return t;
    });
    long every = policy.interval().toMillis();
    timer.scheduleWithFixedDelay(() -> {
      try {
        Swept s = sweep();
        if (s.released() > 0 || s.removed() > 0) {
          log.info("retention released {} results, removed {} segment files",
              s.released(), s.removed());
        }
      } catch (SQLException | IOException | RuntimeException e) {
        // The next sweep tries again; nothing is removed that a live manifest names.
        log.warn("retention sweep failed: {}", e.toString());
      }
    }, every, every, TimeUnit.MILLISECONDS);
  }

  /** One sweep: release past the bounds (journal first), then remove unreferenced files. */
  Swept sweep() throws SQLException, IOException {
    long now = clock.getAsLong();
    long oldest = now - policy.maxAge().toMillis();
    int released = journal.transaction(() -> {
      List<JournalStore.Retained> all = journal.retained();
      long total = 0;
      for (JournalStore.Retained r : all) {
        total += r.resultBytes();
      }
      int n = 0;
      for (JournalStore.Retained r : all) {
        if (r.finishedMillis() >= oldest && total <= policy.maxBytes()) {
          break; // oldest first: everything after is younger and the total fits
        }
        journal.release(r.correlation());
        total -= r.resultBytes();
        n++;
      }
      return n;
    });
    return new Swept(released, removeUnreferenced());
  }

  private int removeUnreferenced() throws SQLException, IOException {
    Lock exclusive = writers.writeLock();
    try {
      if (!exclusive.tryLock(removalWait.toMillis(), TimeUnit.MILLISECONDS)) {
        return 0; // a long query is writing: the next sweep removes
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
    try {
      Set<String> live = new HashSet<>();
      for (byte[] m : journal.transaction(journal::liveManifests)) {
        try {
          for (SegmentRef ref : ResultManifest.parseFrom(m).getSegmentsList()) {
            live.add(Digests.hex(ref.getSha256().toByteArray()));
          }
        } catch (InvalidProtocolBufferException e) {
          // Which files it names is unknown, so none may go this time.
          log.error("a retained manifest does not parse; no segment files removed");
          return 0;
        }
      }
      int removed = 0;
      for (byte[] sha : segments.stored()) {
        if (!live.contains(Digests.hex(sha)) && segments.remove(sha)) {
          removed++;
        }
      }
      return removed;
    } finally {
      exclusive.unlock();
    }
  }

  @Override
  public synchronized void close() {
    if (timer != null) {
      timer.shutdownNow();
      try {
        timer.awaitTermination(removalWait.toMillis() + 1000, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
