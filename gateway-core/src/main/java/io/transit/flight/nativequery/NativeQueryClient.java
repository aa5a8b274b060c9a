package io.transit.flight.nativequery;

import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import io.transit.flight.proto.TableDeclaration;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The native query system's public query client: the seam where the embedded engine stands
 * today and a remote native service plugs in later. Every method checks the principal's current
 * rights; none trusts the gateway's word for them.
 *
 * <p>Thread-safe; methods may block (journal fsync, query execution waits).
 *
 * <p>Failures are {@link io.transit.flight.diagnostic.GatewayException}s: {@code
 * NAMESPACE_CONFLICT} (different bytes at a used sequence), {@code SEQUENCE_GAP} (fact {@code
 * expected_sequence}), {@code ACCESS_DENIED}, {@code RETIRED}, {@code EVIDENCE}, {@code
 * UNKNOWN_OUTCOME} (the outcome of a send cannot be known; the command may or may not be
 * recorded). Reads of a correlation that names no query of the requesting principal fail with
 * {@link io.transit.flight.diagnostic.QueryCode#UNKNOWN_RESULT}; engine failures carry their
 * {@link io.transit.flight.diagnostic.GatewayException#queryCode() queryCode} so callers classify
 * them by type.
 */
public interface NativeQueryClient extends AutoCloseable {
  /**
   * Records one signed command and returns its recorded outcome, or, for identical bytes at a
   * used sequence, replays the recorded outcome unchanged: {@link #decide}'s outcome.
   */
  default CommandOutcome send(SignedCommand command) {
    return decide(command).outcome();
  }

  /**
   * As {@link #send}, telling also whether the outcome was recorded by an earlier send of the
   * same bytes ({@code replayed}: a retry) or by this one. The engine knows it inside the
   * command's own transaction, so a caller that labels retries needs no read of its own before.
   */
  Decided decide(SignedCommand command);

  /** One command's decision: its recorded outcome, and whether an earlier send recorded it. */
  record Decided(CommandOutcome outcome, boolean replayed) {}

  /**
   * Announces the commands the caller is about to {@link #send}, in order, so the engine may start
   * work ahead: checking their signatures, and executing the bundle they upload (an early run,
   * whose result only a query accepted for the same bundle digest takes). It records and decides
   * nothing, and whatever it starts changes no outcome: each command is still verified and
   * decided by its own send, and commands never sent cost only the work started. Never fails; the
   * default ignores it.
   */
  default void expect(List<SignedCommand> commands) {}

  /**
   * Announces, before its commands are even signed, the canonical bundle the caller is about to
   * upload as namespace {@code namespace} (its first sequence) of {@code principal}, so the engine
   * may start executing it at once (an early run). The same hint as {@link #expect}, sooner: it
   * records and decides nothing, a query takes the result only once its own verified chain names
   * the same bundle digest, and a bundle never uploaded costs only the work started. The {@link
   * #expect} that follows for the same bundle starts no second run. Never fails; the default
   * ignores it.
   */
  default void announce(long principal, long namespace, byte[] bundle) {}

  /**
   * Withdraws what {@link #announce} and {@link #expect} started for namespace {@code namespace}
   * of {@code principal}: this call sends no more of that chain (it failed, or its deadline
   * passed). A hint as they are: it records and decides nothing, and a query already accepted
   * for the bundle runs on. Never fails; the default ignores it.
   */
  default void withdraw(long principal, long namespace) {}

  /**
   * The engine's compiler. The engine owns compilation: the gateway compiles a statement only
   * through this (to answer GetSchema and GetFlightInfo before anything is sent), and the plans it
   * returns are the ones the engine validates and executes, so a remote engine keeps its plans to
   * itself and the gateway never hands it one. Thread-safe.
   */
  Planner planner();

  /**
   * The engine's current source/requester checks, made before the gateway compiles a statement
   * over {@code table} or tells the caller anything about it (a catalog row, a schema, a compile
   * diagnostic): the principal is registered, may read the Table's source, and the Table is
   * published with exactly this declaration — the checks a submit's admission makes — and, for
   * {@link AccessUse#ADMIT}, the principal also holds the send and inspect rights. Returns
   * normally when all hold; otherwise fails {@link io.transit.flight.diagnostic.QueryCode#ACCESS_DENIED}
   * or {@link io.transit.flight.diagnostic.QueryCode#SOURCE_UNAVAILABLE} (classify by {@code
   * queryCode()}). Records nothing.
   */
  void checkAccess(ReadAccess access, TableDeclaration table, AccessUse use);

  /**
   * Which engine build this client reaches: with a statement's declaration fingerprint, the
   * frozen basis diagnostics name for its rejections and failures.
   */
  EngineIdentity engineIdentity();

  /** The next sequence the principal's journal expects. */
  long nextSequence(long principal);

  /**
   * Waits until the accepted query with this correlation is no longer running, or until {@code
   * deadlineNanos} ({@link System#nanoTime()} based) passes, and returns its latest status.
   */
  QueryStatus awaitQuery(ReadAccess access, long correlation, long deadlineNanos)
      throws InterruptedException;

  /** The canonical retained manifest bytes; their SHA-256 is what statement tickets carry. */
  byte[] readManifest(ReadAccess access, long correlation);

  /**
   * One bounded read: the captured bytes of segment {@code index}, re-checking entry-read
   * access each time. Fails with {@code BUDGET_EXHAUSTED} when the segment exceeds {@code
   * maxBytes}.
   */
  byte[] readSegment(ReadAccess access, long correlation, int index, long maxBytes);

  /**
   * The same bounded read with the same checks, captured into a buffer of {@code allocator}
   * instead of the heap: the segment's bytes are {@code [0, writerIndex())} of the returned
   * buffer, which the caller owns and closes. This default copies the heap form; a client that
   * can fill the buffer directly (the embedded engine reads the file into it) overrides it.
   *
   * @throws org.apache.arrow.memory.OutOfMemoryException when {@code allocator} refuses the
   *     segment's size
   */
  default ArrowBuf readSegment(
      ReadAccess access, long correlation, int index, long maxBytes, BufferAllocator allocator) {
    byte[] bytes = readSegment(access, correlation, index, maxBytes);
    ArrowBuf buf = allocator.buffer(bytes.length);
    buf.setBytes(0, bytes);
    buf.writerIndex(bytes.length);
    return buf;
  }

  @Override
  void close();
}
