package io.transit.flight.nativequery.embedded;

import io.transit.flight.proto.NativeCommand;

/**
 * A fault-injection hook for tests of the admission side: consulted by {@link EmbeddedEngine#send}
 * just before the command's journal transaction and just after it commits. Returning true makes
 * the send throw {@code UNKNOWN_OUTCOME} ({@code query.unknown_outcome}) at that point: before the
 * record nothing is recorded; after it the command is recorded (and an accepted query runs) but the
 * caller never sees the outcome. Called on the sending thread; must be thread-safe.
 *
 * <p>{@link #executionDelayMillis()} holds every accepted query back before it executes, so tests
 * can act (deadlines, disconnects, kill -9) while a query is accepted but unfinished. It is read
 * on the engine's execution threads.
 *
 * <p>{@link #finishDelayMillis()} holds every query after it executed, right before its one
 * terminal commit (a small result's segments, the manifest and the status together), so a kill -9
 * can land between execution and that commit. Read on the execution threads.
 *
 * <p>{@link #submitDelayMillis()} holds every submit on its sending thread before its journal
 * transaction, so a kill -9 can land after an early run executed the chain's bundle (and stored a
 * large result's segments) but before the submit recorded its query.
 *
 * <p>{@link #releaseAfterExecution()} releases every result as soon as its query has run (before
 * waiters are woken), so a test can redeem a ticket for a retired result. Read on the execution
 * threads.
 *
 * <p>{@link #renewLeases()} false stops the engine renewing its execution leases, as a stalled
 * replica would (with {@link #executionDelayMillis()}, a zombie that wakes after another replica
 * took its queries over). Read on the engine's lease thread.
 */
public interface CommandFaults {
  /** Where around the commit a fault may be injected. */
  enum Point {
    BEFORE_RECORD,
    AFTER_RECORD
  }

  /** Never fails: the production setting. */
  CommandFaults NONE = (point, command) -> false;

  boolean fail(Point point, NativeCommand command);

  /** How long each accepted query waits before it executes; 0 (the default) runs it at once. */
  default long executionDelayMillis() {
    return 0;
  }

  /**
   * Whether a chain's bundle may run early, before its submit (docs/native-engine.md "Early
   * runs"). An early run has no execution hold, so the default is false whenever
   * {@link #executionDelayMillis()} holds queries back. Read on the sending thread; must not block.
   */
  default boolean runsEarly() {
    return executionDelayMillis() == 0;
  }

  /**
   * How long each query waits after executing, before its terminal commit; 0 (the default) commits
   * at once.
   */
  default long finishDelayMillis() {
    return 0;
  }

  /** How long each submit waits before its journal record; 0 (the default) records it at once. */
  default long submitDelayMillis() {
    return 0;
  }

  /** Whether each query's result is released right after it executed; false by default. */
  default boolean releaseAfterExecution() {
    return false;
  }

  /** Whether the engine renews the leases of queries it holds; true by default. */
  default boolean renewLeases() {
    return true;
  }
}
