package io.transit.flight.nativequery.embedded;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This engine's execution leases (docs/native-engine.md "Execution leases"): it claims each query
 * it accepts, renews the leases of the queries it holds every {@link LeasePolicy#renewal()}, and
 * every {@link LeasePolicy#scan()} claims queries whose lease expired (another replica died or
 * stalls, or this engine restarted) and hands them to the engine to run. The journal's attempt
 * number is the fencing token: only the current attempt can finish a query.
 *
 * <p>Threads: {@link #claimAccepted} runs on a sending thread inside its journal transaction;
 * {@link #hold}, {@link #holds} and {@link #drop} on sending threads, the engine's execution
 * threads and the lease threads; renewals run on the {@code native-lease-renew} thread and scans
 * on the {@code native-lease-scan} thread ({@link #start}; apart, so that a scan slowed by the
 * journal never delays the renewal that keeps this engine's own queries); {@link #stopScans},
 * {@link #stop} and {@link #giveUp} are called once each, in that order, by the engine's close:
 * takeovers stop first, renewals only after the close's drain, so a query still running here is
 * not taken over by another replica meanwhile (which fencing would keep correct, but the work
 * would be done twice).
 *
 * <p>Time: lease times are on the journal's lease clock ({@link JournalStore#leaseClockMillis}),
 * read at each renewal and scan and carried forward between them by the monotonic clock, so a
 * step of this host's wall clock moves no lease and a claim at acceptance costs no read of it.
 * Each claim and renewal takes its times when its row is written, not when its transaction
 * began: a lease is never written already expired.
 */
final class Leases {
  private static final Logger log = LoggerFactory.getLogger(Leases.class);

  /** Receives a query this engine claimed in a scan; called on the scan's thread. */
  interface Starter {
    void start(long correlation, long attempt);
  }

  /** A reading of the lease clock and the monotonic time it was taken at. */
  private record Reading(long millis, long nanos) {}

  private final JournalStore journal;
  private final LeasePolicy policy;
  // Any thread reads; replaced after each reading: by the lease threads, start's scan, and a
  // sending thread's claimAccepted when no reading was taken yet.
  private volatile Reading clock;
  private final BooleanSupplier renewing;
  /** Most queries held (queued or running) before a scan claims no more. */
  private final int capacity;
  /** This open's identity in the journal: random, so a restarted process is another owner. */
  private final long owner;
  /** Host and process id, for operators reading the journal. */
  private final String holder;
  // Any thread: correlation → the attempt this engine holds, from claim until its run ends.
  private final Map<Long, Long> held = new ConcurrentHashMap<>();
  // Written by scans (open's thread, then the scan thread): the last scan stopped at its limit,
  // so a freed slot scans again.
  private volatile boolean backlog;
  // Cleared once by stopScans (the closing thread): no scan claims anything after it.
  private volatile boolean scanning = true;
  // @GuardedBy("this"): set by start, shut down by stop.
  private ScheduledExecutorService renewals;
  // @GuardedBy("this"): set by start, shut down by stop.
  private ScheduledExecutorService scans;
  // @GuardedBy("this"): set once by start.
  private Starter starter;

  Leases(JournalStore journal, LeasePolicy policy, BooleanSupplier renewing, int capacity) {
    this.journal = journal;
    this.policy = policy;
    this.renewing = renewing;
    this.capacity = capacity;
    long id = 0;
    SecureRandom random = new SecureRandom();
    while (id == 0) { // 0 is "never claimed" in the journal
      id = random.nextLong();
    }
    this.owner = id;
    this.holder = hostName() + "/" + ProcessHandle.current().pid();
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      return "unknown-host";
    }
  }

  long owner() {
    return owner;
  }

  String holder() {
    return holder;
  }

  /**
   * Claims a query this engine has just accepted, inside the accepting transaction (so the claim
   * costs no commit of its own); returns the attempt, 0 when it could not be claimed (a scan will).
   */
  long claimAccepted(long correlation) throws SQLException {
    long now = clock == null ? readClock() : now();
    OptionalLong attempt =
        journal.claim(correlation, owner, holder, now, now + policy.lease().toMillis());
    return attempt.orElse(0);
  }

  /** Reads the lease clock (inside a journal transaction) and carries it forward from now on. */
  private long readClock() throws SQLException {
    long millis = journal.leaseClockMillis();
    clock = new Reading(millis, System.nanoTime());
    return millis;
  }

  /** Now on the lease clock: the last reading plus the monotonic time since. */
  private long now() {
    Reading r = clock;
    return r.millis() + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - r.nanos());
  }

  /** Notes that this engine runs {@code attempt} of the query (after the claim committed). */
  void hold(long correlation, long attempt) {
    held.put(correlation, attempt);
  }

  /** True while this engine still believes it holds {@code attempt} (no renewal was refused). */
  boolean holds(long correlation, long attempt) {
    Long a = held.get(correlation);
    return a != null && a == attempt;
  }

  /** The run of {@code attempt} ended; a scan held back by its limit may claim more now. */
  void drop(long correlation, long attempt) {
    held.remove(correlation, attempt);
    if (backlog) {
      schedule(0);
    }
  }

  /**
   * Takes over expired leases once on the calling thread (the engine's open, so unfinished queries
   * of an earlier open whose lease lapsed start at once), then renews and scans on the two lease
   * threads.
   */
  void start(Starter starter) throws SQLException {
    synchronized (this) {
      this.starter = starter;
    }
    scan();
    synchronized (this) {
      renewals = Executors.newSingleThreadScheduledExecutor(named("native-lease-renew"));
      long renewEvery = policy.renewal().toMillis();
      renewals.scheduleWithFixedDelay(this::renewQuietly, renewEvery, renewEvery,
          TimeUnit.MILLISECONDS);
      scans = Executors.newSingleThreadScheduledExecutor(named("native-lease-scan"));
      long scanEvery = policy.scan().toMillis();
      scans.scheduleWithFixedDelay(this::scanQuietly, scanEvery, scanEvery,
          TimeUnit.MILLISECONDS);
    }
    log.info("execution leases: owner {} ({}), lease {} ms, renewed every {} ms, takeover scan"
            + " every {} ms", Long.toHexString(owner), holder, policy.lease().toMillis(),
        policy.renewal().toMillis(), policy.scan().toMillis());
  }

  private static java.util.concurrent.ThreadFactory named(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  private synchronized void schedule(long delayMillis) {
    if (scans == null) {
      return;
    }
    try {
      scans.schedule(this::scanQuietly, delayMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // Stopped: nothing more is claimed.
    }
  }

  private void renewQuietly() {
    try {
      renew();
    } catch (SQLException | RuntimeException e) {
      // The lease lapses only after two more failed renewals; if it does, the finish is fenced.
      log.warn("renewing execution leases failed: {}", e.toString());
    } catch (Error e) {
      // A periodic task that throws is never run again, silently: every lease would lapse.
      log.error("renewing execution leases failed; the next renewal runs as scheduled", e);
    }
  }

  private void scanQuietly() {
    if (!scanning) {
      return;
    }
    try {
      scan();
    } catch (SQLException | RuntimeException e) {
      log.warn("execution lease scan failed: {}", e.toString());
    } catch (Error e) {
      // As in renewQuietly: an escaped Error would end the scans for good.
      log.error("execution lease scan failed; the next scan runs as scheduled", e);
    }
  }

  /**
   * The held leases by correlation, the order a scan claims rows in (its query's {@code ORDER BY}):
   * a renewal and another replica's scan that lock the same rows in one order cannot deadlock.
   */
  private List<Map.Entry<Long, Long>> heldInLockOrder() {
    List<Map.Entry<Long, Long>> mine = new ArrayList<>(held.entrySet());
    mine.sort(Map.Entry.comparingByKey());
    return mine;
  }

  /** Extends every held lease in one transaction; a refused one is fenced and no longer held. */
  void renew() throws SQLException {
    if (held.isEmpty() || !renewing.getAsBoolean()) {
      return;
    }
    List<Map.Entry<Long, Long>> mine = heldInLockOrder();
    long lease = policy.lease().toMillis();
    List<Map.Entry<Long, Long>> lost = journal.transaction(() -> {
      readClock();
      List<Map.Entry<Long, Long>> refused = new ArrayList<>();
      for (Map.Entry<Long, Long> e : mine) {
        if (!journal.renew(e.getKey(), owner, e.getValue(), now() + lease)) {
          refused.add(e);
        }
      }
      return refused;
    });
    for (Map.Entry<Long, Long> e : lost) {
      // Finished meanwhile (its run drops it anyway) or claimed by another replica: fenced.
      if (held.remove(e.getKey(), e.getValue())) {
        log.info("query {} attempt {}: the lease is no longer held (finished, or claimed by"
            + " another replica)",
            Long.toUnsignedString(e.getKey()), e.getValue());
      }
    }
  }

  /** Claims expired leases up to the free capacity and starts them. */
  void scan() throws SQLException {
    Starter s;
    synchronized (this) {
      s = starter;
    }
    int room = capacity - held.size();
    if (room <= 0) {
      backlog = true;
      return;
    }
    long lease = policy.lease().toMillis();
    List<long[]> claimed = journal.transaction(() -> {
      List<long[]> out = new ArrayList<>();
      for (long correlation : journal.expiredLeases(readClock(), room)) {
        if (held.containsKey(correlation)) {
          continue; // running here: a renewal failed, but this engine still runs it
        }
        long now = now();
        OptionalLong attempt = journal.claim(correlation, owner, holder, now, now + lease);
        if (attempt.isPresent()) {
          out.add(new long[] {correlation, attempt.getAsLong()});
        }
      }
      return out;
    });
    backlog = claimed.size() >= room;
    for (long[] c : claimed) {
      log.info("query {}: took over its expired lease as attempt {}",
          Long.toUnsignedString(c[0]), c[1]);
      s.start(c[0], c[1]);
    }
  }

  /**
   * Stops taking over queries; called first by the engine's close. A scan already under way ends
   * normally (what it claims is held, and given up by {@link #giveUp}).
   */
  void stopScans() {
    scanning = false;
  }

  /** Stops renewals (and the scan timer); called by the engine's close after its drain. */
  void stop() {
    List<ScheduledExecutorService> timers = new ArrayList<>();
    synchronized (this) {
      if (renewals != null) {
        timers.add(renewals);
        timers.add(scans);
      }
      renewals = null;
      scans = null;
    }
    for (ScheduledExecutorService t : timers) {
      t.shutdownNow();
    }
    try {
      for (ScheduledExecutorService t : timers) {
        t.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Gives up the leases of queries still held at close (expiry 0), so another replica, or this
   * state's next open, takes them over at once instead of after the lease.
   */
  void giveUp() {
    if (held.isEmpty()) {
      return;
    }
    List<Map.Entry<Long, Long>> mine = heldInLockOrder();
    try {
      journal.transaction(() -> {
        for (Map.Entry<Long, Long> e : mine) {
          journal.renew(e.getKey(), owner, e.getValue(), 0);
        }
        return null;
      });
      held.clear();
    } catch (SQLException | RuntimeException e) {
      log.warn("giving up execution leases at close failed (they expire instead): {}",
          e.toString());
    }
  }
}
