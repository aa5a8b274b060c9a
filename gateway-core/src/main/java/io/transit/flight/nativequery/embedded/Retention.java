package io.transit.flight.nativequery.embedded;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.ResultManifest;
import io.transit.flight.proto.SegmentRef;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The retention policy's enforcer: releases the oldest retained results past the maximum age or
 * past the maximum total bytes (in the journal, as {@link EmbeddedEngine#release} does), forgets
 * the history of statements, unsubmitted uploads and refused commands past the history age when
 * the policy bounds it ({@link #forgetHistory}), then removes segment files no unreleased
 * manifest names. The journal commits first and files go after it, so a crash in between leaves
 * only unreferenced files, removed by the next sweep.
 *
 * <p>Threads: {@link #sweep} runs on the single {@code native-retention} thread ({@link #start})
 * or, in tests, on the caller, one at a time. Query runners hold {@link #writing()} (the read
 * side of a fair lock) from their first segment write until their manifest commits, and write
 * through {@link #watching}'s store, which notes each digest in {@link #written}.
 *
 * <p>The removal step reads the retained manifests aside ({@link
 * JournalStore#liveManifestsAside}), holding neither the journal nor that lock, because the read
 * grows with what is retained (an index entry per retained result, 60 ms over 62,000) and every
 * query's segment write would wait behind it; it lists the store then, holding nothing either.
 * Only then does it take the write side, and only to remove, for at most {@link
 * #REMOVAL_HOLD_NANOS} (what is left goes at the next sweep, which comes sooner). A listed file
 * that no manifest of its read names either belongs to a released result, or was written by a
 * query whose manifest committed after the read began or has not committed yet: such a query
 * held the read side when it wrote, after the write side was last held, so its digest is in
 * {@link #written}, which the removal step counts as live and clears while it holds the write
 * side. It takes the write side only when it is free, looking for at most {@code removalWait}
 * (not queued on the fair lock, where it would hold up every run behind it), and otherwise
 * leaves removal to the next sweep, which comes sooner; after {@link #QUEUE_AFTER_MISSES} such
 * sweeps in a row the next one queues, for at most {@code removalWait}.
 * {@link #released()} is called from any thread (the engine's release). {@link #close} is called
 * once by the engine.
 */
final class Retention implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Retention.class);

  /**
   * What one sweep did: results released, files removed, whether it read the retained manifests
   * to look for unreferenced files (see {@link #removeUnreferenced}), how many statements,
   * unsubmitted uploads and other refused commands' records it forgot, and whether it left work
   * for a sooner sweep ({@code behind}): releasing or forgetting stopped at its budget with more
   * past the bounds ({@link #RELEASE_PAGES_PER_SWEEP}, {@link #FORGET_PAGES_PER_SWEEP}), removal
   * stopped at its hold's bound, or files to remove met no free write side.
   */
  record Swept(int released, int removed, boolean manifestsRead, int forgotten, boolean behind) {
    Swept(int released, int removed, boolean manifestsRead) {
      this(released, removed, manifestsRead, 0, false);
    }
  }

  /** What {@link #forgetHistory} forgot, and whether it stopped at its budget. */
  private record Forgot(int statements, int uploads, int refusals, boolean behind) {
    static final Forgot NOTHING = new Forgot(0, 0, 0, false);

    int total() {
      return statements + uploads + refusals;
    }
  }

  /** Skipped: the manifests were not read, so nothing was removed. */
  private static final int NOT_READ = -1;

  /** Retained results the release step reads at a time, oldest first. */
  static final int RELEASE_PAGE = 256;
  /**
   * Transactions of the release step one sweep runs at most (16,384 results); one that stops at
   * it with more past the bounds is {@code behind}, and the next sweep comes sooner.
   */
  static final int RELEASE_PAGES_PER_SWEEP = 64;
  /**
   * The longest one sweep removes files while holding the write side (segment writers wait on
   * it); what is left is removed by the next sweep, which then comes sooner.
   */
  static final long REMOVAL_HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
  /** How often a sweep looks whether the write side is free (see {@link #acquire}). */
  private static final long ACQUIRE_POLL_MILLIS = 5;
  /**
   * Sweeps in a row that had files to remove and never found the write side free; the next one
   * queues for it (see {@link #acquire}).
   */
  static final int QUEUE_AFTER_MISSES = 3;
  /** At most this many sweeps in a row skip the manifest read (see removeUnreferenced). */
  static final int FULL_READ_EVERY = 30;
  /**
   * Manifests read per page by the unreferenced-file check: a manifest holds the statement's
   * column names (up to about 16 KB), so a page is at most a few MiB however many are retained.
   */
  static final int MANIFEST_PAGE = 256;
  /** Finished statements one transaction of {@link #forgetHistory} forgets at most. */
  static final int FORGET_PAGE = 64;
  /**
   * Transactions of {@link #forgetHistory} one sweep runs at most: a backlog (the bound just
   * turned on over a long history) is worked off over several sweeps, not in one long one.
   */
  static final int FORGET_PAGES_PER_SWEEP = 256;
  /**
   * After a sweep whose releasing or forgetting stopped at its budget, the next comes this soon
   * (or after the interval, when that is shorter): a backlog is then worked off at up to the
   * budget a second, and between two sweeps the journal is the commands' alone for at least this
   * long.
   */
  static final long CATCH_UP_MILLIS = 1_000;

  private final JournalStore journal;
  private final SegmentStore segments;
  private final RetentionPolicy policy;
  private final LongSupplier clock;
  private final Duration removalWait;
  private final ReentrantReadWriteLock writers = new ReentrantReadWriteLock(true);
  /** Releases committed so far (sweeps' and {@link #released()}'s); any thread. */
  private final AtomicLong releases = new AtomicLong();
  /**
   * Digests written through {@link #watching} since the write side was last held: added by
   * execution threads holding the read side, read and cleared by the sweep holding the write side.
   */
  private final Set<ByteString> written = ConcurrentHashMap.newKeySet();
  /** One sweep at a time: the timer's, or a test's on its own thread. */
  private final Object sweeping = new Object();
  // @GuardedBy("sweeping"): the stored files the last manifest read found live (null: no read
  // yet), the release count that read started from, and the sweeps that skipped it since.
  private Set<ByteString> knownLive;
  private long releasesAtRead;
  private int skipped;
  // @GuardedBy("sweeping"): this sweep's manifest read and its hold of the write side (0: none).
  private long readNanos;
  private long heldNanos;
  // @GuardedBy("sweeping"): this sweep's removal stopped at REMOVAL_HOLD_NANOS with files left.
  private boolean removalCut;
  // @GuardedBy("sweeping"): sweeps in a row (this one included) that had files to remove and did
  // not get the write side.
  private int missedLocks;
  // @GuardedBy("this"): set by start(), shut down by close(); each timed sweep schedules the
  // next on it (a schedule after close() is refused, which ends the chain).
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

  /** The write side, as {@link #removeUnreferenced} holds it (tests). */
  Lock removing() {
    return writers.writeLock();
  }

  /** {@code store} as query runners write to it: each written digest counts as live (above). */
  SegmentStore watching(SegmentStore store) {
    return new SegmentStore() {
      @Override
      public byte[] write(byte[] bytes) throws IOException {
        byte[] sha = store.write(bytes);
        written.add(ByteString.copyFrom(sha));
        return sha;
      }

      @Override
      public Optional<byte[]> read(byte[] sha256, long expectedBytes) throws IOException {
        return store.read(sha256, expectedBytes);
      }

      @Override
      public Optional<ArrowBuf> read(byte[] sha256, long expectedBytes,
          BufferAllocator allocator) throws IOException {
        return store.read(sha256, expectedBytes, allocator);
      }

      @Override
      public void sync() throws IOException {
        store.sync();
      }

      @Override
      public List<byte[]> stored() throws IOException {
        return store.stored();
      }

      @Override
      public boolean remove(byte[] sha256) throws IOException {
        return store.remove(sha256);
      }

      @Override
      public boolean reachable() {
        return store.reachable();
      }
    };
  }

  /** Starts the sweeps on one daemon thread. Called once, by the engine's open. */
  synchronized void start() {
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "native-retention");
      t.setDaemon(true);
      return t;
    });
    ScheduledExecutorService on = timer;
    on.schedule(() -> timed(on), policy.interval().toMillis(), TimeUnit.MILLISECONDS);
  }

  /** A sweep on the timer's thread {@code on}, which then schedules the next one there. */
  private void timed(ScheduledExecutorService on) {
    long next = policy.interval().toMillis();
    try {
      next = nextDelayMillis(sweep(), next);
    } catch (SQLException | IOException | RuntimeException e) {
      // The next sweep tries again; nothing is removed that a live manifest names.
      log.warn("retention sweep failed: {}", e.toString());
    } catch (Error e) {
      // Without the next sweep nothing would ever be released or removed again, and no line
      // would say why: the timer keeps an escaped throwable to itself.
      log.error("retention sweep failed; the next sweep runs as scheduled", e);
    }
    try {
      on.schedule(() -> timed(on), next, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      // close() shut the timer down: no next sweep.
    }
  }

  /** The wait before the sweep after {@code swept}: sooner while forgetting is behind. */
  static long nextDelayMillis(Swept swept, long intervalMillis) {
    return swept.behind() ? Math.min(intervalMillis, CATCH_UP_MILLIS) : intervalMillis;
  }

  /**
   * One sweep: release past the bounds (journal first), then remove unreferenced files. The
   * release step reads the retained bytes' sum and then the oldest results a page at a time from
   * the journal's index, so a sweep with nothing to release costs one pass over the index inside
   * the database (the sum, read aside: {@link JournalStore#retainedBytesAside}) and one page,
   * instead of sorting and reading every row.
   */
  Swept sweep() throws SQLException, IOException {
    synchronized (sweeping) {
      try {
        return sweepOnce();
      } finally {
        // Whatever else failed: the room the removals gave back holds the reserve again.
        journal.keepReserve();
      }
    }
  }

  /**
   * One page of releases, committed. On a full file system the journal's reserve is freed for it
   * and it is tried once more: its removals are what give the room back (JournalReserve).
   */
  private Released releaseOnePage(long oldest, long total) throws SQLException {
    try {
      return journal.transaction(() -> releasePage(oldest, total));
    } catch (SQLException e) {
      if (journal.isFullWithNothingRecorded(e) && journal.freeReserve()) {
        return journal.transaction(() -> releasePage(oldest, total));
      }
      throw e;
    }
  }

  private Swept sweepOnce() throws SQLException, IOException {
    journal.checkFile();
    long now = clock.getAsLong();
    long oldest = now - policy.maxAge().toMillis();
    // Summed before the transaction, where it holds up no command (the sum reads every retained
    // result's index entry). Under the byte bound, a result finished since counts at the next
    // sweep; over it (rare) the sum is taken again inside, so a release since counts exactly.
    long retained = journal.retainedBytesAside();
    long releaseStarted = System.nanoTime();
    int released = 0;
    int releasePages = 0;
    Released page = null;
    do {
      long total = page == null ? retained : page.total();
      page = releaseOnePage(oldest, total);
      released += page.released();
      releasePages++;
      if (page.released() > 0) {
        // Per committed page: a later page that fails must not hide these releases from the
        // next sweep's file removal (it reads the manifests again only after a release).
        releases.incrementAndGet();
      }
    } while (page.more() && releasePages < RELEASE_PAGES_PER_SWEEP);
    boolean releaseBehind = page.more();
    long releaseNanos = System.nanoTime() - releaseStarted;
    long forgetStarted = System.nanoTime();
    Forgot forgot = policy.forgetsHistory()
        ? forgetHistory(now - policy.historyAge().toMillis()) : Forgot.NOTHING;
    long forgetNanos = System.nanoTime() - forgetStarted;
    readNanos = 0;
    heldNanos = 0;
    removalCut = false;
    int missedBefore = missedLocks;
    int removed = removeUnreferenced();
    if (released > 0 || removed > 0) {
      // The two costs say what the sweep did to statements: the read runs beside them, only the
      // lock's hold keeps query runs waiting.
      log.info("retention released {} results in {} ms, removed {} segment files (manifests "
          + "read aside in {} ms; writers' lock held {} ms)", released, releaseNanos / 1_000_000,
          Math.max(removed, 0), readNanos / 1_000_000, heldNanos / 1_000_000);
    }
    if (forgot.total() > 0) {
      log.info("retention forgot the history of {} statements, {} unsubmitted uploads and {}"
          + " other refused commands in {} ms{}", forgot.statements(), forgot.uploads(),
          forgot.refusals(), forgetNanos / 1_000_000,
          forgot.behind() ? " (more past the bound: the next sweep comes sooner)" : "");
    }
    return new Swept(released, Math.max(removed, 0), removed != NOT_READ, forgot.total(),
        releaseBehind || forgot.behind() || removalCut || missedLocks > missedBefore);
  }

  /** What one page of {@link #releasePage} did. */
  private record Released(int released, long total, boolean more) {}

  /**
   * Inside its own transaction: releases the oldest results past either bound, at most one page
   * of {@link #RELEASE_PAGE}; {@code total} is the retained bytes as last read (aside, or left by
   * the previous page). Over the byte bound it is summed again here, after {@link
   * JournalStore#lockReleases}: another replica's sweep may have released since, and a release
   * counted twice would release a younger result too. A page per transaction, so that a backlog
   * (a restart after a long stop, a bound lowered) holds up commands one page at a time, not for
   * the whole of it.
   */
  private Released releasePage(long oldest, long total) throws SQLException {
    journal.lockReleases();
    long left = total > policy.maxBytes() ? journal.retainedBytes() : total;
    List<JournalStore.Retained> page = journal.oldestRetained(RELEASE_PAGE);
    int n = 0;
    for (JournalStore.Retained r : page) {
      if (r.finishedMillis() >= oldest && left <= policy.maxBytes()) {
        return new Released(n, left, false); // oldest first: the rest is younger and fits
      }
      journal.release(r.correlation());
      left -= r.resultBytes();
      n++;
    }
    return new Released(n, left, page.size() == RELEASE_PAGE);
  }

  /**
   * Forgets the history of statements that finished before {@code cutoff} and whose result is
   * released or that failed — their query row, upload and parts, and the command records of
   * their chain ({@link #forgetChain}) — a page per transaction; then, once those are caught up,
   * of uploads begun before it that never reached an accepted submit, with their parts and
   * records ({@link #forgetAbandoned(JournalStore.Abandoned)}); then the records of refusals
   * decided before it that are still there ({@link JournalStore#forgetRefusedBefore}: a refusal
   * may name no upload, or a chain's namespace beyond its run). At most {@link
   * #FORGET_PAGES_PER_SWEEP} pages in all. No principal's next sequence changes, so a retry of a
   * forgotten command finds no record below it and is refused {@code query.history_pruned}
   * (CommandProcessor), never decided again. Deferred commits: a forgetting a crash loses is
   * done again by the next sweep.
   */
  private Forgot forgetHistory(long cutoff) throws SQLException {
    int statements = 0;
    int uploads = 0;
    int refusals = 0;
    int pages = 0;
    int n;
    do {
      n = journal.transaction(JournalStore.Durability.DEFERRED, () -> forgetFinished(cutoff));
      statements += n;
      pages++;
    } while (n == FORGET_PAGE && pages < FORGET_PAGES_PER_SWEEP);
    boolean full = n == FORGET_PAGE;
    // Uploads only once the finished statements are caught up (a budget left): until then the
    // begin-time index also holds their submitted uploads, which a page of unsubmitted ones
    // reads past.
    while (pages < FORGET_PAGES_PER_SWEEP) {
      int[] page = journal.transaction(JournalStore.Durability.DEFERRED,
          () -> forgetAbandoned(cutoff));
      uploads += page[1];
      pages++;
      full = page[0] == FORGET_PAGE;
      if (!full) {
        break;
      }
    }
    // Refusals last: those in a chain forgotten above went with it, by name. Any other is
    // forgotten by its own age, like every record the bound forgets.
    while (pages < FORGET_PAGES_PER_SWEEP) {
      n = journal.transaction(JournalStore.Durability.DEFERRED,
          () -> journal.forgetRefusedBefore(cutoff, FORGET_PAGE));
      refusals += n;
      pages++;
      full = n == FORGET_PAGE;
      if (!full) {
        break;
      }
    }
    // Out of budget on a full page: there may be more (a last full page may also have been all).
    return new Forgot(statements, uploads, refusals, full && pages == FORGET_PAGES_PER_SWEEP);
  }

  /** One page of finished statements, inside its transaction: how many it forgot. */
  private int forgetFinished(long cutoff) throws SQLException {
    List<JournalStore.Finished> finished = journal.finishedBefore(cutoff, FORGET_PAGE);
    for (JournalStore.Finished f : finished) {
      Optional<JournalStore.Upload> upload = journal.upload(f.principal(), f.namespace());
      if (upload.isPresent()) {
        forgetChain(f.principal(), f.namespace(), upload.get().partCount(), f.correlation());
        // The begin is provably the chain's even among records that name no namespace (see
        // forgetAbandoned): a retry from it is then refused, not replayed toward a forgotten query.
        journal.forgetCommand(f.principal(), f.namespace());
      }
      journal.forget(f);
    }
    return finished.size();
  }

  /**
   * One page of unsubmitted uploads, inside its transaction: how many it read, and how many of
   * them it forgot (a submit decided since the read keeps its upload).
   */
  private int[] forgetAbandoned(long cutoff) throws SQLException {
    List<JournalStore.Abandoned> page = new ArrayList<>(
        journal.abandonedBefore(cutoff, FORGET_PAGE));
    // Principals' rows in one order, so two replicas' sweeps never wait on each other in a
    // cycle; each locked before any other row of its own, as a command's decision takes it.
    page.sort(Comparator.comparing(JournalStore.Abandoned::principal, Long::compareUnsigned)
        .thenComparing(JournalStore.Abandoned::namespace, Long::compareUnsigned));
    int forgotten = 0;
    for (int k = 0; k < page.size(); k++) {
      JournalStore.Abandoned a = page.get(k);
      if (k == 0 || page.get(k - 1).principal() != a.principal()) {
        journal.lockPrincipal(a.principal());
      }
      forgotten += forgetAbandoned(a) ? 1 : 0;
    }
    return new int[] {page.size(), forgotten};
  }

  /**
   * Inside {@link #forgetHistory}'s transaction, the principal locked: an upload that never
   * reached an accepted submit, with its chain's records, if it is still unsubmitted (a submit
   * decided since the page was read leaves it to the finished statements).
   */
  private boolean forgetAbandoned(JournalStore.Abandoned a) throws SQLException {
    Optional<JournalStore.Upload> upload = journal.upload(a.principal(), a.namespace());
    if (upload.isEmpty() || upload.get().state() == JournalStore.UploadState.SUBMITTED) {
      return false;
    }
    forgetChain(a.principal(), a.namespace(), upload.get().partCount(), 0);
    // The begin: the upload at a namespace was begun by the command at that sequence
    // (UploadValidator), so its record goes even when it names no namespace (recorded earlier).
    journal.forgetCommand(a.principal(), a.namespace());
    journal.forgetUpload(a.principal(), a.namespace());
    return true;
  }

  /**
   * Inside {@link #forgetHistory}'s transaction: the command records of the chain of the upload
   * at {@code namespace} of {@code partCount} parts — begin at the namespace, one command per
   * part, the seal, the submit.
   * Within that run, each record that names the namespace; and every record of the run when
   * the submit's place holds the accepted submit of {@code correlation} (records from before the
   * namespace was kept name none; for them that is the proof the run is this chain's alone).
   * Records of the chain outside the run (another client's commands interleaved) stay.
   */
  private void forgetChain(long principal, long namespace, int partCount, long correlation)
      throws SQLException {
    long submit = namespace + partCount + 2;
    boolean wholeRun = false;
    if (correlation != 0) {
      Optional<JournalStore.Recorded> recorded = journal.command(principal, submit);
      wholeRun = recorded.isPresent() && acceptedAs(recorded.get(), correlation);
    }
    for (long s = namespace; s != submit + 1; s++) {
      if (wholeRun) {
        journal.forgetCommand(principal, s);
      } else {
        journal.forgetCommand(principal, s, namespace);
      }
    }
  }

  private static boolean acceptedAs(JournalStore.Recorded recorded, long correlation) {
    try {
      CommandOutcome o = CommandOutcome.parseFrom(recorded.outcome());
      return o.getKind() == CommandOutcome.Kind.ACCEPTED && o.getCorrelation() == correlation;
    } catch (InvalidProtocolBufferException e) {
      return false; // not provably this chain's: kept
    }
  }

  /**
   * Any thread, after a commit that released results outside a sweep: the next sweep looks for
   * the files they alone named.
   */
  void released() {
    releases.incrementAndGet();
  }

  /**
   * Removes stored files no unreleased manifest names. Reading every manifest is the expensive
   * part, so it is skipped when it cannot find anything: nothing was released since the last
   * such read and every stored file was one that read found live (a file becomes unreferenced
   * only by a release; a file no manifest named yet, such as one a failed query left, is not in
   * that set). The first sweep after start always reads, for what a crash left behind. Returns
   * the files removed, or {@link #NOT_READ}.
   */
  private int removeUnreferenced() throws SQLException, IOException {
    long releasesBefore = releases.get();
    // A release by another gateway on a shared journal is not counted here; that gateway's own
    // sweep removes its files, and every FULL_READ_EVERY-th sweep reads anyway in case it died.
    // The store is listed for this check only when nothing else already calls for the read.
    if (knownLive != null && releasesBefore == releasesAtRead && ++skipped < FULL_READ_EVERY
        && allKnownLive(segments.stored())) {
      forgetWritten();
      return NOT_READ;
    }
    skipped = 0;
    // Read before the write side is taken, holding nothing (see the class comment).
    long started = System.nanoTime();
    Set<ByteString> live = new HashSet<>();
    List<JournalStore.LiveManifest> page;
    long after = Long.MIN_VALUE;
    do {
      // A page at a time: only the digests stay, never every manifest at once.
      page = journal.liveManifestsAside(after, MANIFEST_PAGE);
      for (JournalStore.LiveManifest m : page) {
        try {
          for (SegmentRef ref : ResultManifest.parseFrom(m.manifest()).getSegmentsList()) {
            live.add(ref.getSha256());
          }
        } catch (InvalidProtocolBufferException e) {
          // Which files it names is unknown, so none may go this time.
          log.error("a retained manifest does not parse; no segment files removed");
          return 0;
        }
        after = m.correlation();
      }
    } while (page.size() == MANIFEST_PAGE);
    readNanos = System.nanoTime() - started;
    // Listed before the write side is taken too: a listing is a network call with the object
    // store, and no query's segment write may wait on it. Listing early only narrows the
    // candidates: a file stored after it is not removed this time.
    List<byte[]> candidates = new ArrayList<>();
    Set<ByteString> kept = new HashSet<>();
    for (byte[] sha : segments.stored()) {
      ByteString digest = ByteString.copyFrom(sha);
      if (live.contains(digest)) {
        kept.add(digest);
      } else {
        candidates.add(sha);
      }
    }
    if (candidates.isEmpty()) {
      forgetWritten();
      knownLive = kept;
      releasesAtRead = releasesBefore;
      return 0;
    }
    Lock exclusive = writers.writeLock();
    if (!acquire(exclusive)) {
      if (++missedLocks > QUEUE_AFTER_MISSES) {
        log.warn("retention has not had the segment writers' lock in {} sweeps; unreferenced"
            + " segment files wait", missedLocks);
      }
      return NOT_READ; // queries are writing: the next sweep, which comes sooner, removes
    }
    missedLocks = 0;
    long locked = System.nanoTime();
    try {
      // No query holds the read side now: every file written since the write side was last held
      // is either in a manifest the read saw or in written.
      live.addAll(written);
      written.clear();
      int removed = 0;
      for (byte[] sha : candidates) {
        ByteString digest = ByteString.copyFrom(sha);
        if (live.contains(digest)) {
          kept.add(digest);
          continue;
        }
        if (System.nanoTime() - locked > REMOVAL_HOLD_NANOS) {
          // The rest waits for the next sweep, which comes sooner: every removal is a round trip
          // with the object store, and segment writers wait on this hold.
          removalCut = true;
          break;
        }
        if (segments.remove(sha)) {
          removed++;
        }
      }
      // The files left by a cut are in neither set: the next sweep reads the manifests again.
      knownLive = kept;
      releasesAtRead = releasesBefore;
      return removed;
    } finally {
      exclusive.unlock();
      heldNanos = System.nanoTime() - locked;
    }
  }

  /**
   * Takes the write side within {@code removalWait}, as a rule without queueing for it: on a fair
   * lock a queued writer holds up every reader behind it, so a sweep that waited in line would
   * stall each segment-writing run for as long as the longest one running. A sweep that never
   * finds the lock free leaves removal to the next. But runs whose holds overlap without a gap
   * would then put removal off for good, until the disk fills: after {@link #QUEUE_AFTER_MISSES}
   * such sweeps the next one queues, so that the runs holding the read side finish and new ones
   * wait behind it — for at most {@code removalWait}, once in that many sweeps.
   */
  private boolean acquire(Lock exclusive) {
    try {
      if (missedLocks >= QUEUE_AFTER_MISSES) {
        return exclusive.tryLock(removalWait.toNanos(), TimeUnit.NANOSECONDS);
      }
      long end = System.nanoTime() + removalWait.toNanos();
      while (!exclusive.tryLock()) {
        if (System.nanoTime() - end >= 0) {
          return false;
        }
        Thread.sleep(ACQUIRE_POLL_MILLIS);
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Empties {@link #written} when no query holds the read side (never waiting for one), so that
   * sweeps that skip the read keep it small: whatever it held is named by manifests committed
   * before the next read begins.
   */
  private void forgetWritten() {
    Lock exclusive = writers.writeLock();
    if (exclusive.tryLock()) {
      try {
        written.clear();
      } finally {
        exclusive.unlock();
      }
    }
  }

  private boolean allKnownLive(List<byte[]> stored) {
    for (byte[] sha : stored) {
      if (!knownLive.contains(ByteString.copyFrom(sha))) {
        return false;
      }
    }
    return true;
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
