package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.Digests;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.SignedCommand;
import java.io.ByteArrayOutputStream;
import java.sql.PreparedStatement;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Early runs: a statement's query executed while its chain of commands is still being decided. A
 * statement is read-only and deterministic over immutable publications, so its result is a
 * function of the bundle bytes alone, and those are known before the journal has recorded them:
 * the gateway announces the bundle before it signs the chain ({@link EmbeddedEngine#announce})
 * and the whole chain before it sends it ({@link EmbeddedEngine#expect}), and the seal has every
 * byte verified, recorded and checked against the begun digest. Executing from the first
 * announcement overlaps DuckDB with the chain's signing, checks and records instead of following
 * them.
 *
 * <p>Nothing of an early run is visible before its submit, and nothing of it rests on unverified
 * bytes:
 *
 * <ul>
 *   <li>it records nothing; its result is used only by the run of a query whose journal row
 *       names the same bundle digest ({@link QueryRunner#run}) — a digest the seal checked
 *       against the verified, recorded parts — and the submit's checks (proof, rights, plan)
 *       decide as they would without it;
 *   <li>a small result stays in memory; the first segment of a larger one waits to be stored
 *       until the seal has verified the bundle ({@link Early#verify}) or an accepted submit
 *       names its digest ({@link Early#handOff});
 *   <li>a command of the chain that is rejected or fails, a submit that is replayed or never
 *       comes, or a gateway that withdraws the announcement, abandons it: the statement it
 *       executes in DuckDB is cancelled, a projection also stops between exported batches, and
 *       what it computed is dropped (segment files it stored are unnamed and go with the next
 *       retention sweep, as a fenced run's do).
 * </ul>
 *
 * <p>A wholly inline result the run finished before its submit came does not wait for a hand-off:
 * the submit's own (then durable) transaction reads it ({@link #ready}) and records it with the
 * acceptance, so the statement's acceptance and result are one commit ({@link
 * QueryRunner#recordAccepted}); the run is then abandoned.
 *
 * <p>Threads: {@link #offer}, {@link #handOff}, {@link #ready} and {@link #abandon} are called on
 * sending threads (the announcement's, or before, inside or after a command's journal
 * transaction); each {@link Early} then lives on the engine execution thread that runs it, which
 * calls {@link Early#abandoned}, {@link Early#beforeStoring}, {@link Early#executing}, {@link
 * Early#executed}, {@link Early#computed}, {@link Early#await} and {@link #finished}; a sending
 * thread that closes a run cancels its DuckDB statement outside the run's monitor. At most {@code
 * permits} early runs exist at once (the engine keeps one execution thread for queries that were
 * not run early); the map is guarded by {@code this}, each early run's state by its own monitor.
 */
final class EarlyRuns {
  /** The accepted query an early run's result becomes. */
  record HandOff(long correlation, long attempt) {}

  /** A chain's bundle as announced: not yet verified, not yet recorded. */
  record Announced(long principal, long namespace, byte[] bundle, byte[] bundleSha256) {}

  private record Key(long principal, long namespace) {}

  /** One early run; shared between the sending threads of its chain and its execution thread. */
  static final class Early {
    final long principal;
    final long namespace;
    /** The bundle's bytes and digest; never modified. */
    final byte[] bundle;
    final byte[] bundleSha256;
    // @GuardedBy("this"): every byte of the bundle verified and recorded (the seal, or an
    // accepted submit naming this digest).
    private boolean verified;
    // @GuardedBy("this"): set once by the submit's sending thread.
    private HandOff handOff;
    // @GuardedBy("this"): no hand-off will be taken any more (abandoned — also once the submit's
    // own transaction recorded the result —, timed out, closing).
    private boolean closed;
    // @GuardedBy("this"): the result, once computed; read by the submit's sending thread.
    private QueryRunner.Computed computed;
    // @GuardedBy("this"): the computation ended, with a result in computed or without one.
    private boolean settled;
    // @GuardedBy("this"): the DuckDB statement the execution thread runs now, or null; set and
    // cleared by the execution thread, cancelled by the thread that closes the run.
    private PreparedStatement executing;
    // @GuardedBy("this"): a cancel was sent to executing: its session is not used again.
    private boolean cancelSent;

    Early(long principal, long namespace, byte[] bundle, byte[] bundleSha256, boolean verified) {
      this.principal = principal;
      this.namespace = namespace;
      this.bundle = bundle;
      this.bundleSha256 = bundleSha256;
      this.verified = verified;
    }

    /** Sending thread: the seal verified and recorded the bundle. */
    synchronized void verify() {
      verified = true;
      notifyAll();
    }

    /**
     * Sending thread: gives the accepted query, whose bundle digest is {@code querySha256}, to
     * this run; false when it no longer takes one or executes another bundle. An accepted submit
     * names a sealed bundle, so a matching digest verifies the run too: a retried chain's seal is
     * a replay and verifies nothing, and its early run must still be able to store its result.
     */
    boolean handOff(HandOff h, byte[] querySha256) {
      PreparedStatement stop;
      synchronized (this) {
        if (closed) {
          return false;
        }
        if (Arrays.equals(querySha256, bundleSha256)) {
          verified = true;
          handOff = h;
          notifyAll();
          return true;
        }
        closed = true; // not this run's query: it runs the usual way, this run stops
        notifyAll();
        stop = takeStatement();
      }
      cancel(stop);
      return false;
    }

    /**
     * Execution thread: the computation ended; {@code result} is what it computed (kept for
     * {@link #result}), null when it failed or was dropped.
     */
    synchronized void computed(QueryRunner.Computed result) {
      computed = result;
      settled = true;
      notifyAll();
    }

    /**
     * Sending thread: as {@link #result} (not taking it), first waiting at most {@code nanos}
     * for a verified run still computing — one whose bundle is unverified may be held before
     * storing until the submit's hand-off, so it is not waited for.
     */
    synchronized QueryRunner.Computed awaitResult(byte[] sha, long nanos) {
      waitFor(() -> settled || !verified || closed || handOff != null, nanos);
      return result(sha);
    }

    /**
     * Waits on this run's monitor, which the caller holds, until {@code done} or {@code nanos}
     * pass; an interrupt ends the wait and stays set.
     */
    private void waitFor(BooleanSupplier done, long nanos) {
      long end = System.nanoTime() + nanos;
      try {
        while (!done.getAsBoolean()) {
          long left = end - System.nanoTime();
          if (left <= 0) {
            return;
          }
          TimeUnit.NANOSECONDS.timedWait(this, left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /**
     * Sending thread: the computed result when this run still waits for a submit of bundle
     * {@code sha}, else null. Reading it changes nothing: the submit that records it ends the
     * run after its commit ({@link EarlyRuns#abandon}), as a journal transaction's work must
     * have no effect outside the journal (it may run more than once).
     */
    synchronized QueryRunner.Computed result(byte[] sha) {
      if (closed || handOff != null || computed == null || !Arrays.equals(sha, bundleSha256)) {
        return null;
      }
      return computed;
    }

    /**
     * Sending thread: no query will come; a hand-off already made stands. The statement the run
     * executes in DuckDB is cancelled: an aggregate would otherwise run to its end for nothing
     * (a retry of a statement already recorded announces, and abandons, a whole run).
     */
    void abandon() {
      PreparedStatement stop;
      synchronized (this) {
        if (handOff != null) {
          return;
        }
        closed = true;
        notifyAll();
        stop = takeStatement();
      }
      cancel(stop);
    }

    /** Execution thread: {@code statement} executes in DuckDB until {@link #executed}. */
    synchronized void executing(PreparedStatement statement) {
      if (closed) {
        throw new QueryRunner.Abandoned();
      }
      executing = statement;
    }

    /** Execution thread: the statement ended; true when a cancel was sent to it. */
    synchronized boolean executed() {
      executing = null;
      return cancelSent;
    }

    /** The statement to cancel once this monitor is released (JDBC's cancel may wait). */
    private PreparedStatement takeStatement() {
      PreparedStatement s = executing;
      cancelSent |= s != null;
      return s;
    }

    /**
     * Outside the monitor: the session the statement belongs to is discarded after it ended
     * ({@link #executed} says so), so a cancel arriving late reaches no other run.
     */
    private static void cancel(PreparedStatement statement) {
      if (statement != null) {
        DuckSessions.cancel(statement);
      }
    }

    /** Execution thread, between batches: true once the run's work can only be dropped. */
    synchronized boolean abandoned() {
      return closed;
    }

    /**
     * Execution thread, before the first segment is stored: waits until the bundle is verified;
     * abandoned (or not verified within {@link EmbeddedEngine#EARLY_WAIT_MS}) throws.
     */
    synchronized void beforeStoring() {
      waitFor(() -> verified || closed,
          TimeUnit.MILLISECONDS.toNanos(EmbeddedEngine.EARLY_WAIT_MS));
      if (!verified || closed) {
        closed = true;
        throw new QueryRunner.Abandoned();
      }
    }

    /**
     * Execution thread: the hand-off, waiting for it at most {@code millis} (or until {@code
     * stopping}); null when abandoned or timed out — a submit decided later runs its query the
     * usual way.
     */
    synchronized HandOff await(long millis, BooleanSupplier stopping) throws InterruptedException {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      while (handOff == null && !closed && !stopping.getAsBoolean()) {
        long left = end - System.nanoTime();
        if (left <= 0) {
          break;
        }
        // Short slices: the engine's closing flag is not a notification.
        TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
      }
      closed = true;
      return handOff;
    }
  }

  private final int maxRunning;
  private final Semaphore permits;
  // @GuardedBy("this"): the early runs whose submit has not been decided yet.
  private final Map<Key, Early> open = new HashMap<>();

  /** {@code permits} early runs at most at once (0: none). */
  EarlyRuns(int permits) {
    this.maxRunning = Math.max(0, permits);
    this.permits = new Semaphore(maxRunning);
  }

  /**
   * The bundle a chain announces: its begin's namespace and digest, and its parts' data, which
   * must assemble to that digest. Empty for anything else (the commands themselves refuse it).
   */
  static Optional<Announced> announced(List<SignedCommand> chain) {
    try {
      NativeCommand begin = NativeCommand.parseFrom(chain.get(0).getCommand());
      if (!begin.hasBegin() || begin.getBegin().getPartCount() > chain.size() - 1) {
        return Optional.empty();
      }
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      for (int i = 1; i <= begin.getBegin().getPartCount(); i++) {
        NativeCommand part = NativeCommand.parseFrom(chain.get(i).getCommand());
        if (!part.hasPart() || part.getPrincipal() != begin.getPrincipal()
            || part.getNamespace() != begin.getNamespace()) {
          return Optional.empty();
        }
        part.getPart().getData().writeTo(bytes);
      }
      byte[] bundle = bytes.toByteArray();
      byte[] sha = Digests.sha256(bundle);
      if (!Arrays.equals(sha, begin.getBegin().getBundleSha256().toByteArray())) {
        return Optional.empty();
      }
      return Optional.of(new Announced(begin.getPrincipal(), begin.getNamespace(), bundle, sha));
    } catch (java.io.IOException | IndexOutOfBoundsException e) {
      // A chain that does not parse (or writeTo failing) starts nothing early.
      return Optional.empty();
    }
  }

  /**
   * Sending thread: a new early run for a bundle, when a permit is free (the caller executes it,
   * and calls {@link #finished} when it ends or cannot start). When the namespace has one
   * already, a {@code verified} offer of the same bundle verifies it, and nothing new starts.
   */
  Optional<Early> offer(long principal, long namespace, byte[] bundle, byte[] bundleSha256,
      boolean verified) {
    Key key = new Key(principal, namespace);
    Early existing;
    Early e = null;
    // One look and one insert under the lock: two calls for the same namespace at once (a retry
    // overlapping its first call) start one run, not two of which the second hides the first.
    synchronized (this) {
      existing = open.get(key);
      if (existing == null && permits.tryAcquire()) {
        e = new Early(principal, namespace, bundle, bundleSha256, verified);
        open.put(key, e);
      }
    }
    if (existing != null) {
      if (!Arrays.equals(existing.bundleSha256, bundleSha256)) {
        // Announced one bundle, uploaded another: the announced run is dropped; the uploaded
        // bundle may still run early from its seal, once a permit is free.
        abandon(principal, namespace);
      } else if (verified) {
        existing.verify();
      }
      return Optional.empty();
    }
    return Optional.ofNullable(e);
  }

  /**
   * Sending thread, after a submit naming {@code bundleSha256} was accepted: hands its query to
   * the namespace's early run; false when there is none taking it (the caller runs the query the
   * usual way).
   */
  boolean handOff(long principal, long namespace, long correlation, long attempt,
      byte[] bundleSha256) {
    Early e;
    synchronized (this) {
      e = open.remove(new Key(principal, namespace));
    }
    return e != null && e.handOff(new HandOff(correlation, attempt), bundleSha256);
  }

  /**
   * Sending thread, before a submit's transaction and inside it: the namespace's early result
   * for bundle {@code sha}, when its run has computed it and still waits for this submit (else
   * null), waiting at most {@code waitNanos} for a verified run that is still computing. The run
   * keeps it until {@link #abandon} (after the submit's commit recorded it) or a hand-off.
   */
  QueryRunner.Computed ready(long principal, long namespace, byte[] sha, long waitNanos) {
    Early e;
    synchronized (this) {
      e = open.get(new Key(principal, namespace));
    }
    return e == null ? null : e.awaitResult(sha, waitNanos);
  }

  /** Sending thread: a command of the namespace's chain did not lead to a new query. */
  void abandon(long principal, long namespace) {
    Early e;
    synchronized (this) {
      e = open.remove(new Key(principal, namespace));
    }
    if (e != null) {
      e.abandon();
    }
  }

  /** Execution thread (or the offering thread when it could not start): the run has ended. */
  void finished(Early e) {
    synchronized (this) {
      open.remove(new Key(e.principal, e.namespace), e);
    }
    e.abandon();
    permits.release();
  }

  /** Early runs started and not yet finished (tests). */
  int running() {
    return maxRunning - permits.availablePermits();
  }
}
