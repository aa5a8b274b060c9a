package io.transit.flight.nativequery.embedded;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Fact;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.NativeSignatures;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.NativeCommand;
import io.transit.flight.proto.SignedCommand;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * Decides and records one signed native command: authenticity and send right first (nothing is
 * recorded for a failure there), then, in one journal transaction, replay, conflict, gap, or the
 * upload state machine and its recorded ACCEPTED / REJECTED outcome; a used sequence whose
 * record the history bound forgot is refused, not decided again. Called on the sending thread;
 * the journal's transaction serializes concurrent senders.
 *
 * <p>Durability (docs/admission.md §10): every command commits {@link
 * JournalStore.Durability#DEFERRED deferred}, but a submit whose result is already computed
 * ({@link Finisher}): its transaction also records the terminal status and commits durably. An
 * ACCEPTED outcome of begin, part or seal only leads the gateway to send the chain's next command,
 * and the submit's only to wait for its query ({@link EmbeddedEngine#awaitQuery}): the query's
 * terminal commit is durable and makes the chain durable with it, and a wait that answers before
 * it syncs the journal first. An answer that ends
 * the chain leaves only durable: a REJECTED outcome, a conflict or a gap flushes the journal
 * before it is returned, since each may have been decided on deferred records.
 */
final class CommandProcessor {
  /**
   * A recorded outcome and, for a newly accepted submit, the query to start and the attempt of
   * its lease (0: not claimed, e.g. execution deferred), and whether its terminal status was
   * recorded in the same transaction ({@link Finisher}); for a newly accepted seal, the bundle's
   * bytes (else null; see {@link UploadValidator.Applied}).
   */
  record Result(CommandOutcome outcome, long startCorrelation, long startAttempt,
      boolean replayed, byte[] sealedBundle, boolean finished) {}

  /** Claims the execution lease of a just-accepted query inside its transaction (see Leases). */
  interface Claimer {
    /** Never claims: the query waits for a takeover scan. */
    Claimer NONE = correlation -> 0;

    /** The claimed attempt, 0 when not claimed. */
    long claim(long correlation) throws SQLException;
  }

  /**
   * Records an accepted submit's result inside its own transaction, when one is already computed
   * (an early run's, {@link EarlyRuns}): the acceptance and the terminal status then commit
   * together, durably, and no run follows.
   */
  interface Finisher {
    /** Never finishes: every accepted query runs. */
    Finisher NONE = new Finisher() {
      @Override
      public boolean ready(NativeCommand submit) {
        return false;
      }

      @Override
      public boolean finish(NativeCommand submit, long correlation, long attempt) {
        return false;
      }
    };

    /**
     * Before the submit's transaction, on its sending thread: whether a result is there to
     * record, so that the transaction commits durably.
     */
    boolean ready(NativeCommand submit) throws SQLException;

    /** Inside the transaction that accepted {@code correlation} under lease {@code attempt}. */
    boolean finish(NativeCommand submit, long correlation, long attempt) throws SQLException;
  }

  private final JournalStore journal;
  private final RightsRegistry rights;
  private final UploadValidator uploads;
  private final SignatureVerdicts verdicts;
  private final long firstSequence;
  private final Claimer claimer;
  private final Finisher finisher;
  /** Wall-clock milliseconds: when a refusal was decided (the history bound's input). */
  private final LongSupplier clock;

  CommandProcessor(JournalStore journal, RightsRegistry rights, UploadValidator uploads,
      SignatureVerdicts verdicts, long firstSequence, Claimer claimer, Finisher finisher,
      LongSupplier clock) {
    this.clock = clock;
    this.claimer = claimer;
    this.finisher = finisher;
    this.verdicts = verdicts;
    this.journal = journal;
    this.rights = rights;
    this.uploads = uploads;
    this.firstSequence = firstSequence;
  }

  /** Parses the command bytes; a malformed command is never recorded. */
  static NativeCommand parse(SignedCommand signed) {
    try {
      NativeCommand c = NativeCommand.parseFrom(signed.getCommand());
      if (c.getBodyCase() == NativeCommand.BodyCase.BODY_NOT_SET) {
        throw QueryCode.INVALID_COMMAND.failure("the native command has no body");
      }
      return c;
    } catch (InvalidProtocolBufferException e) {
      throw QueryCode.INVALID_COMMAND.failure("the native command bytes do not parse");
    }
  }

  /**
   * Starts checking the signatures of commands that will be sent after the one being decided now
   * (a chain the gateway announced); a command that does not parse or names an unregistered
   * principal is left to its own send, which refuses it.
   */
  void prefetch(SignedCommand signed) {
    NativeCommand command;
    try {
      command = NativeCommand.parseFrom(signed.getCommand());
    } catch (InvalidProtocolBufferException e) {
      return;
    }
    try {
      verdicts.prefetchCommand(signed, rights.require(command.getPrincipal()).key());
    } catch (GatewayException e) {
      // Not registered (now): the send of this command is denied, nothing to start.
    }
  }

  /** Checks the signature with the principal's current key and its send right. */
  void authenticate(SignedCommand signed, NativeCommand command) {
    PrincipalRights r = rights.require(command.getPrincipal());
    if (!verdicts.verifyCommand(signed, r.key())) {
      throw RightsRegistry.denied("the command signature does not verify");
    }
    if (!r.canSend()) {
      throw RightsRegistry.denied("the principal may not send commands");
    }
  }

  Result decide(SignedCommand signed, NativeCommand command) throws SQLException {
    byte[] digest = Digests.sha256(signed.getCommand().toByteArray());
    long principal = command.getPrincipal();
    long sequence = command.getSequence();
    Result result;
    // A submit whose result is already computed commits durably, with that result in it.
    boolean finishing = command.getBodyCase() == NativeCommand.BodyCase.SUBMIT
        && finisher.ready(command);
    try {
      result = journal.transaction(
          finishing ? JournalStore.Durability.DURABLE : JournalStore.Durability.DEFERRED,
          () -> apply(command, digest, principal, sequence, finishing));
    } catch (GatewayException e) {
      flushAll(); // a conflict, a gap or a pruned history rests on records read
      throw e;
    }
    if (result.outcome().getKind() != CommandOutcome.Kind.ACCEPTED) {
      flushAll(); // a refusal, or the replay of one another replica may have recorded
    }
    return result;
  }

  /**
   * The decision's transaction committed, but making what the answer rests on durable failed: the
   * refusal may be recorded or not once the journal recovers, so the answer is an unknown outcome
   * (a retry of the same command is decided again from the journal), never "nothing recorded".
   */
  static final class NotDurable extends SQLException {
    NotDurable(SQLException cause) {
      // The cause's text stays with the cause (logged by the engine), out of this message.
      super("the decision committed but could not be made durable", cause.getSQLState(), cause);
    }
  }

  private void flushAll() throws NotDurable {
    try {
      journal.flushAll();
    } catch (SQLException e) {
      throw new NotDurable(e);
    }
  }

  /** The decision inside the command's transaction. */
  private Result apply(NativeCommand command, byte[] digest, long principal, long sequence,
      boolean finishing) throws SQLException {
    long next = journal.nextSequence(principal, firstSequence);
    int order = Long.compareUnsigned(sequence, next);
    if (order < 0) {
      Optional<JournalStore.Recorded> rec = journal.command(principal, sequence);
      if (rec.isPresent() && Arrays.equals(rec.get().commandSha256(), digest)) {
        return new Result(recorded(rec.get().outcome()), 0, 0, true, null, false);
      }
      if (rec.isEmpty() && Long.compareUnsigned(sequence, firstSequence) >= 0) {
        // Every sequence from the first to the next was recorded: this one was, and the history
        // bound has forgotten it (Retention#forgetHistory).
        throw QueryCode.HISTORY_PRUNED.failure("the record of this used sequence was pruned")
            .withOutcome(Outcome.UNKNOWN)
            .withActions(Action.USE_NEXT_SEQUENCE)
            .with(Fact.unsigned("sequence", sequence))
            .with(Fact.unsigned("namespace", command.getNamespace()));
      }
      throw conflict(command, rec.isPresent()
          ? "different command bytes at a used native sequence"
          : "the sequence is below the principal's first native sequence");
    }
    if (order > 0) {
      throw QueryCode.SEQUENCE_GAP.failure(
              "sequence " + Long.toUnsignedString(sequence) + " is ahead; expected "
                  + Long.toUnsignedString(next))
          .with(Fact.unsigned("sequence", sequence))
          .with(Fact.unsigned("expected_sequence", next));
    }
    if (sequence == -1L) {
      // 2^64-1 is the last sequence: accepting it would leave no next sequence to expect.
      throw QueryCode.INVALID_COMMAND.failure("the native sequence space is exhausted");
    }
    CommandOutcome.Builder outcome = CommandOutcome.newBuilder()
        .setPrincipal(principal)
        .setSequence(sequence)
        .setCommandSha256(ByteString.copyFrom(digest));
    UploadValidator.Applied applied = UploadValidator.Applied.NOTHING;
    try {
      applied = uploads.apply(command);
      outcome.setKind(CommandOutcome.Kind.ACCEPTED).setCorrelation(applied.correlation());
    } catch (UploadValidator.Rejection r) {
      outcome.setKind(CommandOutcome.Kind.REJECTED).setCode(r.code()).setMessage(r.getMessage());
    }
    CommandOutcome recorded = outcome.build();
    if (recorded.getKind() == CommandOutcome.Kind.ACCEPTED) {
      journal.recordCommand(principal, sequence, command.getNamespace(), digest,
          recorded.toByteArray());
    } else {
      journal.recordRefusal(principal, sequence, command.getNamespace(), digest,
          recorded.toByteArray(), clock.getAsLong());
    }
    journal.setNextSequence(principal, sequence + 1);
    // The claim commits with the acceptance: leasing costs an accepted query no commit.
    long start = applied.correlation();
    long attempt = start == 0 ? 0 : claimer.claim(start);
    boolean finished = finishing && attempt != 0 && finisher.finish(command, start, attempt);
    return new Result(recorded, start, attempt, false, applied.sealedBundle(), finished);
  }

  private static CommandOutcome recorded(byte[] bytes) throws SQLException {
    try {
      return CommandOutcome.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new SQLException("a recorded outcome does not parse", e);
    }
  }

  private static GatewayException conflict(NativeCommand command, String message) {
    return QueryCode.NAMESPACE_CONFLICT.failure(message)
        .with(Fact.unsigned("sequence", command.getSequence()))
        .with(Fact.unsigned("namespace", command.getNamespace()));
  }
}
