package io.transit.flight.nativequery.embedded;

import io.transit.flight.proto.QueryStatus;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongConsumer;

/**
 * The engine's durable journal: principals' next sequences, recorded commands and outcomes,
 * uploads and their parts, and saved queries with their retained manifests. The engine's logic
 * sees only this interface; {@link SqliteJournal} is the embedded default, and {@code
 * io.transit.flight.nativequery.postgres.PostgresJournal} is the shared journal of a replicated
 * deployment (several gateways, one database).
 *
 * <p>Contract for every implementation: {@link #transaction} runs its work as one atomic unit
 * that callers on any thread (senders, query runners, readers) see whole, durable when it returns
 * unless it was run {@link Durability#DEFERRED}; the row-level methods are called only inside a
 * transaction, on the thread that runs it, and a transaction never opens another. Commits reach
 * the disk in commit order: a durable commit that wrote, or {@link #flush}, makes every earlier
 * commit durable too, so what a power loss leaves is a prefix of the commits that ends at or
 * after the last durable one (docs/admission.md §10 builds exactly-once on this). Admission for
 * one principal is serialized: {@link #nextSequence} inside a transaction holds the principal off
 * every other transaction (of this store or of another store on the same journal) until it ends.
 * Unsigned 64-bit ids travel as their signed bit patterns. The throws clause names {@link
 * SQLException} because every implementation is a SQL database; {@link NotCommitted} marks the
 * failures known to have left nothing behind.
 *
 * <p>Formats. The journal records the oldest journal format a build must implement to use it, the
 * compatibility floor (SQLite: the database header's {@code user_version}; PostgreSQL: the {@code
 * reader_format} row of its {@code counters} table; {@link JournalFormat}); {@link #FORMAT} is
 * the format this build implements. Every implementation, at open (after its schema is created or
 * migrated, before anything is served), raises a lower floor to {@link #FORMAT} (inserting it
 * when missing) and refuses with {@link TooNew} a floor above it; the floor is never lowered.
 * Rule for developers: a change to what the journal holds or means that a build of the current
 * {@link #FORMAT} could misread raises {@link #FORMAT} by one, so that from its first open no
 * older build uses the journal — a rollback then fails at start instead of answering wrongly.
 * (The history bound is such a change in hindsight: a build from before it answers the retry of
 * a statement the bound forgot ABORTED {@code query.namespace_conflict}, outcome rejected, as if
 * it had never run.) A change older builds safely ignore (a table, column or index they never
 * read) keeps it. Builds from before the floor (2026-12-07) never read it; and a raised floor is
 * checked at open only, so replicas already running keep serving: a release that raises {@link
 * #FORMAT} is installed with every replica stopped (docs/deployment.md, "Upgrade").
 */
public interface JournalStore extends AutoCloseable {
  /** The journal format this build implements (see the class comment's "Formats"). */
  int FORMAT = 1;

  /**
   * The journal's compatibility floor ({@code reader_format}) is above {@link #FORMAT}: a newer
   * build wrote it, and this one must not use it. The message names the journal, both formats
   * and the remedy, in one line.
   */
  final class TooNew extends SQLException {
    private static final long serialVersionUID = 1L;

    public TooNew(String journal, long required) {
      super("the journal " + journal + " requires journal format " + required + " or newer;"
          + " this build implements format " + FORMAT + ": run a newer build");
    }
  }

  /**
   * The transaction failed before its commit was sent and was rolled back: nothing of it is
   * durable, so the same work may run again (the engine answers UNAVAILABLE {@code
   * query.journal_unavailable}, not an unknown outcome). Any other {@link SQLException} from
   * {@link #transaction} may have committed.
   */
  final class NotCommitted extends SQLException {
    private static final long serialVersionUID = 1L;

    public NotCommitted(String message, SQLException cause) {
      super(message, cause.getSQLState(), cause);
    }
  }

  /** One unit of work inside a transaction. */
  interface Work<T> {
    T run() throws SQLException;
  }

  /** A recorded command: its digest and recorded outcome bytes. */
  record Recorded(byte[] commandSha256, byte[] outcome) {}

  /** Upload states, stored by name. */
  enum UploadState {
    OPEN,
    SEALED,
    SUBMITTED
  }

  record Upload(
      long declaredBytes,
      int partCount,
      byte[] bundleSha256,
      int receivedParts,
      long receivedBytes,
      UploadState state) {}

  /** A saved query: its status and, once it succeeded, the canonical manifest bytes. */
  record SavedQuery(QueryStatus status, byte[] bundleSha256, boolean released, byte[] manifest) {}

  /** When a transaction's commit is durable. */
  enum Durability {
    /** On the disk when the commit returns: survives kill -9 and power loss. */
    DURABLE,
    /**
     * Visible to every caller and surviving the process's death (kill -9) when the commit returns,
     * but lost with the machine (power loss, OS crash) until a later durable commit or {@link
     * #flush}. SQLite: {@code synchronous=NORMAL} for this commit; PostgreSQL: {@code SET LOCAL
     * synchronous_commit = off}.
     */
    DEFERRED
  }

  /** Runs {@code work} as one durable transaction: committed whole, or rolled back and rethrown. */
  default <T> T transaction(Work<T> work) throws SQLException {
    return transaction(Durability.DURABLE, work);
  }

  /**
   * Runs {@code work} as one transaction committed with {@code durability}, or rolled back and
   * rethrown. The work must have no effect outside the journal: an implementation may run it once
   * more after a failure that left nothing committed (a shared journal's lost connection).
   */
  <T> T transaction(Durability durability, Work<T> work) throws SQLException;

  /**
   * Makes every commit so far durable, deferred ones included (one durable commit of its own when
   * a deferred commit may be pending). Called outside a transaction.
   */
  void flush() throws SQLException;

  /**
   * Before an answer that rests on what a transaction read, not only on what it wrote: makes
   * durable every commit that read may have seen. A sole writer read only its own commits
   * ({@link #flush}); on a shared journal the read may have seen another process's deferred
   * commit (a command recorded by another replica, which a crash of the database could still
   * lose), which only a durable commit of this process's own covers ({@link #sync}). Called
   * outside a transaction.
   */
  default void flushAll() throws SQLException {
    if (soleWriter()) {
      flush();
    } else {
      sync();
    }
  }

  /**
   * One durable commit of its own, whatever this process has committed: the journal reaches the
   * disk in commit order, so it covers every earlier commit, another process's deferred ones on a
   * shared journal included. Called outside a transaction, before an answer that may rest on a
   * commit this process did not make.
   */
  void sync() throws SQLException;

  /**
   * Tells {@code observer} each commit's duration in nanoseconds (operations metrics), on the
   * committing thread: it must be cheap and thread-safe. Replaces any previous observer.
   */
  void observeCommits(LongConsumer observer);

  /**
   * Transactions that failed in the journal since open: an SQL error, a lost connection, no
   * connection within the timeout (an SQLException out of {@link #transaction}; a refusal its
   * work throws is not one). The operations metrics' outage signal: a failed transaction records
   * no commit time. Any thread.
   */
  long failures();

  /**
   * True when {@code failure} (from {@link #transaction}) is the journal's file system being full:
   * the store then guarantees the transaction was rolled back, so nothing of it was recorded —
   * unlike any other failed commit, whose outcome is unknown.
   */
  boolean isFullWithNothingRecorded(SQLException failure);

  /**
   * Frees the room this journal holds back on its file system for the commits that give room
   * back (the retention sweep's releases; {@link JournalReserve}); true when there was some.
   * A database server's journal holds none. Called on the retention sweep's thread.
   */
  default boolean freeReserve() {
    return false;
  }

  /** Holds the room back again once there is enough ({@link #freeReserve}); the sweep's thread. */
  default void keepReserve() {}

  /**
   * Checks that a journal kept in a local file still has its file (not removed or replaced
   * under the daemon); from then on every transaction fails {@link NotCommitted} if not. A
   * database server's journal has none to check. The retention sweep's thread.
   */
  default void checkFile() {}

  /**
   * Whether this process is the journal's only writer: true for the SQLite journal, whose state
   * directory one daemon owns ({@code gateway.lock}); false for a database replicas share. Lets
   * readers of values only this process writes (the rights epoch) keep them in memory.
   */
  boolean soleWriter();

  /**
   * Bytes the journal's file system has left for it, measured now; -1 when the store cannot
   * know (a journal on a database server).
   */
  long usableBytes();

  /** The principal's next expected sequence, {@code first} when it has none yet. */
  long nextSequence(long principal, long first) throws SQLException;

  void setNextSequence(long principal, long next) throws SQLException;

  /** The command recorded at this principal's sequence, if any. */
  Optional<Recorded> command(long principal, long sequence) throws SQLException;

  /**
   * Records the outcome of the command at {@code principal}'s {@code sequence}, with the namespace
   * the command names (the history bound forgets a chain's records by it).
   */
  void recordCommand(long principal, long sequence, long namespace, byte[] sha256, byte[] outcome)
      throws SQLException;

  /**
   * {@link #recordCommand} for a command whose outcome is a refusal (REJECTED), decided at {@code
   * refusedMillis} (wall clock): the history bound forgets a refusal's record by that time
   * ({@link #forgetRefusedBefore}), since a refused command may name no upload to be forgotten
   * with.
   */
  void recordRefusal(long principal, long sequence, long namespace, byte[] sha256, byte[] outcome,
      long refusedMillis) throws SQLException;

  Optional<Upload> upload(long principal, long namespace) throws SQLException;

  /** An upload begun at {@code begunMillis} (wall clock; the history bound's input). */
  void beginUpload(long principal, long namespace, long declaredBytes, int parts, byte[] sha256,
      long begunMillis) throws SQLException;

  void addPart(long principal, long namespace, int index, byte[] data) throws SQLException;

  void setUploadState(long principal, long namespace, UploadState state) throws SQLException;

  /** The upload's parts concatenated in index order. */
  byte[] assembled(long principal, long namespace) throws SQLException;

  /**
   * A fresh correlation: durable, increasing, and never handed out twice by any store on the same
   * journal. Values may be skipped (a shared journal's sequence keeps a rolled-back value).
   */
  long allocateCorrelation() throws SQLException;

  void insertAccepted(long correlation, long principal, long namespace, byte[] bundleSha256)
      throws SQLException;

  /**
   * Stores a terminal status (and, when it succeeded, the manifest) of a running query, with the
   * bytes its segments list and the wall-clock time it finished (the retention policy's inputs),
   * only if the query is still ACCEPTED under {@code attempt}: the fencing token of the lease
   * its runner claimed, and only if the row is still the statement {@code s} names with the
   * bundle the result was computed from, {@code bundleSha256} (a correlation is not an identity
   * across a shared journal's crash, which can hand it out again). False, and nothing written,
   * when a later claim or a terminal status came first, or the row is another statement's — the
   * caller then drops its result unpublished.
   */
  boolean finish(QueryStatus s, byte[] bundleSha256, byte[] manifest, long resultBytes,
      long finishedMillis, long attempt) throws SQLException;

  // Execution leases (docs/native-engine.md "Execution leases"). Times are wall-clock millis on
  // the journal's lease clock ({@link #leaseClockMillis}); each method is one conditional UPDATE
  // or SELECT of the queries row.

  /**
   * Now on the clock every lease time of this journal is written and compared in, read inside a
   * transaction: the local wall clock when one process writes the journal, the database server's
   * when replicas share it (their own clocks may be skewed or stepped; one clock for all makes
   * a lease mean the same time to every replica).
   */
  long leaseClockMillis() throws SQLException;

  /**
   * Claims the execution lease of an ACCEPTED query for {@code owner} until {@code untilMillis}
   * and returns the new attempt (the previous one plus one), or empty when the query is terminal,
   * unknown, or held by another owner whose lease has not expired at {@code nowMillis}. {@code
   * holder} names the owner for operators (host and process id).
   */
  OptionalLong claim(long correlation, long owner, String holder, long nowMillis,
      long untilMillis) throws SQLException;

  /**
   * Extends the lease of {@code owner}'s {@code attempt} to {@code untilMillis} (0 gives it up:
   * any replica may claim it at once); false when that attempt no longer holds the query (fenced
   * by a later claim, or the query is terminal).
   */
  boolean renew(long correlation, long owner, long attempt, long untilMillis) throws SQLException;

  /**
   * Correlations of ACCEPTED queries whose lease expired at {@code nowMillis} or that were never
   * claimed, oldest first, at most {@code limit}. A shared journal locks the rows it returns for
   * this transaction and skips rows another transaction holds: a replica stalled inside a
   * transaction (a pause, a lost network) delays the takeover of its own rows only, never a
   * scan's other claims. (A renewal of a row the scan locked waits for the scan's commit, which
   * waits for nothing.)
   */
  List<Long> expiredLeases(long nowMillis, int limit) throws SQLException;

  /**
   * Stores segment {@code index} of a small result in the journal instead of the segment store;
   * called in the transaction of its query's {@link #finish}, so the bytes commit with the
   * manifest naming them or not at all.
   */
  void storeInline(long correlation, int index, byte[] data) throws SQLException;

  /** Segment {@code index} of the result when it is stored in the journal, else empty. */
  Optional<byte[]> inlineSegment(long correlation, int index) throws SQLException;

  /** An unreleased succeeded result as the retention policy sees it. */
  record Retained(long correlation, long finishedMillis, long resultBytes) {}

  /**
   * At most {@code limit} unreleased succeeded results, oldest first (finish time, then
   * correlation): the retention sweep's candidates, read a page at a time from an index, so a
   * sweep that releases nothing reads one page whatever the number retained.
   */
  List<Retained> oldestRetained(int limit) throws SQLException;

  /** The result bytes of every unreleased succeeded result together (read from the index). */
  long retainedBytes() throws SQLException;

  /**
   * {@link #retainedBytes} read outside any transaction of {@link #transaction}'s, so that the
   * sum, which reads an index entry per retained result, holds up no command: the retention sweep
   * reads it before its own transaction. Here in a transaction of its own (a pooled store runs it
   * on another connection); SQLite reads a snapshot on a connection kept for it.
   */
  default long retainedBytesAside() throws SQLException {
    return transaction(Durability.DEFERRED, this::retainedBytes);
  }

  /** A retained result's manifest and its correlation, the key {@link #liveManifests} pages by. */
  record LiveManifest(long correlation, byte[] manifest) {}

  /**
   * Up to {@code limit} manifests, in correlation order after {@code after}, of the unreleased
   * succeeded results whose segments are in the segment store: not held inline in the journal,
   * and not empty (a result without rows has no segment). The stored files they name are live
   * and must not be removed. Read a page at a time: a manifest carries the statement's column
   * names, so the retained ones together can outgrow the heap, and an empty result, which names
   * nothing, is not read at all, since it counts nothing toward the byte bound that releases
   * results and may be retained by the thousand.
   */
  List<LiveManifest> liveManifests(long after, int limit) throws SQLException;

  /**
   * {@link #liveManifests} read outside any transaction of {@link #transaction}'s, as {@link
   * #retainedBytesAside} is: the pages visit every retained result, so they must not hold up
   * commands. Each page sees at least every manifest committed before it was read and not
   * released since; a sweep reading page after page therefore misses none committed before it
   * began.
   */
  default List<LiveManifest> liveManifestsAside(long after, int limit) throws SQLException {
    return transaction(Durability.DEFERRED, () -> liveManifests(after, limit));
  }

  /** Marks a result released and deletes its inline segments; true when it existed. */
  boolean release(long correlation) throws SQLException;

  Optional<SavedQuery> query(long correlation) throws SQLException;

  // The history bound (RetentionPolicy#historyAge; docs/limits.md "What the journal keeps").

  /** A finished statement whose history may be forgotten: its query, principal and namespace. */
  record Finished(long correlation, long principal, long namespace) {}

  /**
   * At most {@code limit} queries that finished before {@code cutoffMillis} and either succeeded
   * with their result released or failed: the statements whose history the sweep may forget.
   * Read in the retention index's order (state, released, finish time, correlation), a range at
   * a time, so a page costs its own rows however long the backlog (a forgotten query is gone
   * from the index), and two sweeps on a shared journal lock the rows they share in one order.
   */
  List<Finished> finishedBefore(long cutoffMillis, int limit) throws SQLException;

  /**
   * Deletes the query row of {@code f}, its inline segments, its upload and the upload's parts.
   * The principal's next sequence stays, so no sequence is ever expected again.
   */
  void forget(Finished f) throws SQLException;

  /** Deletes the command recorded at {@code principal}'s {@code sequence}, if any. */
  void forgetCommand(long principal, long sequence) throws SQLException;

  /**
   * Deletes the command recorded at {@code principal}'s {@code sequence} if it named {@code
   * namespace} (records from before the namespace was kept name none and stay).
   */
  void forgetCommand(long principal, long sequence, long namespace) throws SQLException;

  /** An upload that never reached an accepted submit: its principal and namespace. */
  record Abandoned(long principal, long namespace) {}

  /**
   * At most {@code limit} uploads begun before {@code cutoffMillis} that are not submitted (open,
   * sealed, or sealed with a rejected submit), oldest first, in the order of their index (begin
   * time, principal, namespace).
   */
  List<Abandoned> abandonedBefore(long cutoffMillis, int limit) throws SQLException;

  /**
   * Inside a transaction, before any other row of the principal is touched in it: makes the
   * principal's admission wait for the transaction (a shared journal locks the principal's row,
   * as a command's decision does; the embedded journal's single writer already does).
   */
  void lockPrincipal(long principal) throws SQLException;

  /**
   * Inside a transaction, before it reads what is retained: makes every other journal's (every
   * other replica's) release step wait for this transaction, so that its sum of the retained
   * bytes and its page of oldest results are read with no other release committed between them.
   * A shared journal takes a transaction-scoped advisory lock; the embedded journal's single
   * writer already excludes every other transaction.
   */
  void lockReleases() throws SQLException;

  /**
   * Inside a transaction, before anything else in it, when it releases a result outside the
   * retention sweep (an operator's release): waits for a sweep's page that holds {@link
   * #lockReleases} and keeps the next page from starting until this transaction ends, so no such
   * release commits between a page's sum and its read of the oldest results (it would be counted
   * twice, and a younger result released for it). Releases that take it do not wait for each
   * other. A shared journal takes the same advisory lock in shared mode; the embedded journal's
   * single writer already excludes every other transaction.
   */
  void shareReleases() throws SQLException;

  /** Deletes an upload's row and its parts. */
  void forgetUpload(long principal, long namespace) throws SQLException;

  /**
   * Deletes at most {@code limit} records of refusals decided before {@code cutoffMillis}
   * ({@link #recordRefusal}), oldest first, read from an index of refusals alone, and returns how
   * many it deleted. Touches no principal's row: a retry of a deleted record's sequence finds
   * none below the next sequence, whichever side of the delete it reads. On a shared journal,
   * records another transaction holds are skipped, left to the next page, so two replicas'
   * sweeps never wait on each other here.
   */
  int forgetRefusedBefore(long cutoffMillis, int limit) throws SQLException;

  // The deployment's rights (docs/deployment.md "Shared rights"): a versioned document, opaque to
  // the journal, of which one version is current. Epochs start at 1 and only grow; 0 means none
  // was ever recorded.

  /** One recorded version of the rights: its epoch, its document and the document's SHA-256. */
  record RightsVersion(long epoch, byte[] sha256, byte[] document) {}

  /** The current rights epoch, 0 when none was recorded: one single-row read by key. */
  long rightsEpoch() throws SQLException;

  /**
   * {@link #rightsEpoch} read on its own, outside a caller's transaction, as cheaply as the
   * journal allows (every authorization decision on a shared journal makes one). Any thread.
   */
  default long readRightsEpoch() throws SQLException {
    return transaction(this::rightsEpoch);
  }

  /** The current rights version, empty when none was recorded. */
  Optional<RightsVersion> rights() throws SQLException;

  /**
   * Makes {@code document} the current rights and returns its epoch: the current epoch when the
   * current version already has {@code sha256} (nothing written), else a new version at the next
   * epoch. Serialized with every other publish on the same journal (of this store or another), so
   * concurrent publishes of one document record it once and no publish overwrites another. Only
   * the {@link #RIGHTS_VERSIONS_KEPT} latest versions stay (the new one included): every read
   * goes through the head, and each credential rotation is a version of every caller's rights.
   */
  long publishRights(byte[] sha256, byte[] document) throws SQLException;

  /** Rights versions a publish keeps, the current one included; older ones are deleted. */
  int RIGHTS_VERSIONS_KEPT = 16;

  @Override
  void close() throws SQLException;
}
