package io.transit.flight.nativequery;

import java.util.Collection;
import java.util.function.LongConsumer;

/**
 * The native system's operator surface, apart from the query client: what the gateway process
 * itself does to the engine, never on a caller's behalf, and what its metrics read of it. With
 * {@link NativeQueryClient} it is all the server sees of an engine, embedded or remote.
 *
 * <p>Thread-safe: {@link #updateRights} runs on whichever thread installs a rights version (the
 * reload thread, or a call's thread that found a newer one in the ledger), {@link #release} on
 * whichever thread retires a result; the {@link #rightsLedger} is used from any thread. {@link
 * #observeJournalCommits} is called once, on the main thread while the daemon is built; the
 * early-run counts are read on whichever thread scrapes the metrics.
 */
public interface NativeQueryAdmin {
  /** Replaces every principal's rights at once (a new rights version in force). */
  void updateRights(Collection<PrincipalRights> next);

  /** The deployment's rights in this engine's journal (shared by every replica on it). */
  RightsLedger rightsLedger();

  /** Releases a retained result: later reads fail with RETIRED. Returns false if unknown. */
  boolean release(long correlation);

  /**
   * Tells {@code observer} how long each journal commit took, in nanoseconds, on the committing
   * thread (any engine thread): it must be cheap and thread-safe. Replaces any previous observer.
   */
  void observeJournalCommits(LongConsumer observer);

  /**
   * Journal transactions that failed since open ({@code JournalStore.failures}): what moves while
   * the journal cannot be reached, when no commit time is recorded. Any thread.
   */
  long journalFailures();

  /**
   * Early runs (a bundle executed on {@link NativeQueryClient#announce} or {@link
   * NativeQueryClient#expect}, before its commands are decided) whose result became their query's,
   * since open; 0 for an engine that runs nothing early.
   */
  long earlyRunsAdopted();

  /**
   * Of {@link #earlyRunsAdopted}, the results committed with their submit's acceptance (one
   * commit for both, no run of the query), since open.
   */
  long earlyResultsWithSubmit();

  /** Early runs started and not yet finished. */
  int earlyRunsRunning();
}
