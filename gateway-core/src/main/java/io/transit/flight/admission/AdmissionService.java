package io.transit.flight.admission;

import static io.transit.flight.admission.Unsigned.u64;

import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Basis;
import io.transit.flight.crypto.SignaturePool;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Identity;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.nativequery.EngineIdentity;
import io.transit.flight.nativequery.QueryFailures;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.diagnostic.Recovery;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.CommandOutcome;
import io.transit.flight.proto.QueryStatus;
import io.transit.flight.proto.SignedCommand;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Signed sequenced admission of one statement: limiter permit, canonical bundle (announced to the
 * engine before anything is signed), command chain,
 * one command at a time through the public query client (each waiting for its recorded outcome),
 * then a bounded wait for the query's result.
 *
 * <p>Retries are safe by construction: the same binding, Table, budgets, SQL and first sequence
 * rebuild byte-identical commands, so the native journal replays their recorded outcomes and the
 * accepted query is never executed twice — also after this gateway is replaced. The service never
 * chooses a sequence: on an unknown outcome or a deadline the caller retries with the same first
 * sequence and SQL.
 *
 * <p>Thread-safe and stateless apart from the shared {@link AdmissionLimiter}; {@link #admit} runs
 * on (and blocks) the calling RPC thread. The chain's command signatures are computed on that
 * thread together with the injected {@link SignaturePool}'s helpers (the owner's pool, closed by
 * the owner); the commands are still sent one at a time, in order, from the calling thread.
 */
public final class AdmissionService {

  private final NativeQueryClient client;
  private final AdmissionLimiter limiter;
  private final int partBytes;
  private final LongSupplier nanoClock;
  private final SignaturePool signers;

  public AdmissionService(NativeQueryClient client, AdmissionLimiter limiter, AdmissionConfig config) {
    this(client, limiter, config, SignaturePool.inline(), System::nanoTime);
  }

  /** As above, signing each chain's commands concurrently on {@code signers}. */
  public AdmissionService(NativeQueryClient client, AdmissionLimiter limiter,
      AdmissionConfig config, SignaturePool signers) {
    this(client, limiter, config, signers, System::nanoTime);
  }

  /** As above with a substitute for {@link System#nanoTime()} (tests step time per command). */
  AdmissionService(
      NativeQueryClient client,
      AdmissionLimiter limiter,
      AdmissionConfig config,
      LongSupplier nanoClock) {
    this(client, limiter, config, SignaturePool.inline(), nanoClock);
  }

  private AdmissionService(
      NativeQueryClient client,
      AdmissionLimiter limiter,
      AdmissionConfig config,
      SignaturePool signers,
      LongSupplier nanoClock) {
    this.signers = Objects.requireNonNull(signers, "signers");
    this.client = Objects.requireNonNull(client, "client");
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    this.partBytes = config.partBytes();
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
  }

  /**
   * Admits the statement and waits, until the request's deadline, for its result.
   *
   * @return the succeeded query
   * @throws GatewayException {@code ADMISSION_BUSY} before any command; {@code
   *     NAMESPACE_CONFLICT} / {@code SEQUENCE_GAP} and other client failures with facts {@code
   *     first_sequence}, {@code namespace}, {@code native_sequence}; a rejected outcome as its
   *     {@code query.<code>} (stage {@code admission}); {@code UNKNOWN_OUTCOME} ({@code
   *     admission.unknown_outcome}); a failed query as its stored code; {@code DEADLINE} ({@code
   *     admission.deadline}) while commands remain unsent or the query still runs; {@code
   *     CANCELLED} when the calling thread is interrupted (accepted work continues).
   */
  public Admitted admit(AdmissionRequest request) {
    AdmissionSubject caller = request.caller();
    try (AdmissionLimiter.Permit permit = limiter.tryAcquire(caller.principal())) {
      CanonicalBundle bundle =
          CanonicalBundle.build(caller, request.table(), request.budgets(), request.sql());
      // The engine may start executing the bundle now, while its four commands are signed
      // (a hint: nothing is recorded or decided until each signed command is sent).
      CommandChain.check(bundle.bytes(), request.firstSequence(), partBytes);
      client.announce(caller.principal(), request.firstSequence(), bundle.bytes());
      CommandChain chain;
      Basis basis;
      Sent sent;
      try {
        chain = CommandChain.derive(bundle.bytes(), caller.principal(), caller.key(),
            request.firstSequence(), partBytes, signers);
        // What the engine checks the submit against: the bundle's declaration, this build.
        EngineIdentity engine = client.engineIdentity();
        basis = Basis.of(bundle.message().getDeclarationSha256().toByteArray(), engine.name(),
            engine.version());
        sent = sendChain(chain, request.deadlineNanos(), basis);
      } catch (RuntimeException e) {
        // Nothing more of this chain comes in this call: what the announcement started stops.
        client.withdraw(caller.principal(), request.firstSequence());
        throw e;
      }
      ReadAccess access =
          new ReadAccess(
              caller.principal(), caller.hasRole(), caller.role(), request.table().getSource());
      return awaitResult(chain, access, sent, request.deadlineNanos(), basis);
    }
  }

  /**
   * What sending a chain found: the correlation the submit's outcome names, and whether the
   * chain's first command was recorded by an earlier call (a retry).
   */
  private record Sent(long correlation, boolean replayed) {}

  /** Sends every command in order. */
  private Sent sendChain(CommandChain chain, long deadlineNanos, Basis basis) {
    List<SignedCommand> commands = chain.commands();
    // The later commands' signature checks, and the query itself, can start while the first
    // commands are decided.
    client.expect(commands);
    CommandOutcome outcome = null;
    boolean replayed = false;
    for (int i = 0; i < commands.size(); i++) {
      long sequence = chain.sequenceAt(i);
      if (nanoClock.getAsLong() - deadlineNanos >= 0) {
        GatewayException late = GatewayException.of(
                Cause.DEADLINE,
                "admission.deadline",
                "the deadline passed before the upload was complete; retry with the same sequence")
            .at(Stage.ADMISSION)
            .withIdentity(new Identity(chain.namespace(), null, chain.firstSequence(), null))
            .with("next_unsent_sequence", u64(sequence));
        // Before the first command nothing of this call reached the journal.
        throw i == 0 ? late.withOutcome(Outcome.NOT_ADMITTED) : late;
      }
      try {
        NativeQueryClient.Decided decided = client.decide(commands.get(i));
        outcome = decided.outcome();
        replayed |= i == 0 && decided.replayed();
      } catch (GatewayException e) {
        GatewayException failed = fromClient(e, chain, sequence);
        // Past the first command the chain is partly recorded (a reload revoked the caller's
        // send right mid-upload, say): whatever the cause's default, that is not "not admitted".
        throw i > 0 && failed.outcome() == Outcome.NOT_ADMITTED
            ? Recovery.afterAdmission(failed) : failed;
      } catch (RuntimeException e) {
        // The client broke without a recorded outcome: the command may or may not be recorded.
        throw unknownOutcome(chain, sequence, e);
      }
      checkOutcome(outcome, chain, sequence, basis);
    }
    return new Sent(outcome.getCorrelation(), replayed);
  }

  private void checkOutcome(
      CommandOutcome outcome, CommandChain chain, long sequence, Basis basis) {
    if (outcome == null
        || outcome.getPrincipal() != chain.principal()
        || outcome.getSequence() != sequence) {
      throw QueryCode.EVIDENCE.failure("the native outcome names another command")
          .at(Stage.ADMISSION)
          .withIdentity(commandIdentity(chain, sequence));
    }
    switch (outcome.getKind()) {
      case ACCEPTED -> {}
      case REJECTED -> {
        QueryCode code = QueryCode.fromCode(outcome.getCode());
        String message =
            outcome.getMessage().isEmpty() ? "the native command was rejected" : outcome.getMessage();
        // The journal's record is the original witness: its code string as stored, even one
        // this gateway does not know (presented as query.internal), and the command's digest.
        // Recorded, so whatever the cause: outcome rejected, and the sequence is spent.
        throw code.failure(message)
            .withOutcome(Outcome.REJECTED)
            .withActions(Recovery.afterRecord(code.cause()))
            .at(Stage.ADMISSION)
            .withIdentity(commandIdentity(chain, sequence))
            .withWitness(Witness.nativeRejection(outcome.getCode(), sequence,
                outcome.getCommandSha256().toByteArray()))
            .withBasis(basis);
      }
      default ->
          throw QueryCode.EVIDENCE.failure("the native outcome has no kind")
              .at(Stage.ADMISSION)
              .withIdentity(commandIdentity(chain, sequence));
    }
  }

  private static GatewayException fromClient(
      GatewayException e, CommandChain chain, long sequence) {
    if (e.kind() == Cause.UNKNOWN_OUTCOME) {
      return unknownOutcome(chain, sequence, e);
    }
    return e.at(Stage.ADMISSION).withIdentity(commandIdentity(chain, sequence));
  }

  /** The identity of a failure at one command of the chain. */
  private static Identity commandIdentity(CommandChain chain, long sequence) {
    return new Identity(chain.namespace(), null, chain.firstSequence(), sequence);
  }

  private static GatewayException unknownOutcome(
      CommandChain chain, long sequence, RuntimeException underlying) {
    return new GatewayException(
            Cause.UNKNOWN_OUTCOME,
            "admission.unknown_outcome",
            "outcome of native sequence " + u64(sequence) + " unknown; retry with first sequence "
                + u64(chain.firstSequence()) + " and the same SQL",
            underlying)
        .at(Stage.ADMISSION)
        .withIdentity(commandIdentity(chain, sequence));
  }

  private Admitted awaitResult(
      CommandChain chain, ReadAccess access, Sent sent, long deadlineNanos, Basis basis) {
    long correlation = sent.correlation();
    QueryStatus status;
    try {
      status = client.awaitQuery(access, correlation, deadlineNanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw withQuery(
          GatewayException.of(
              Cause.CANCELLED,
              "admission.cancelled",
              "the call ended while waiting; the accepted query continues"),
          chain,
          correlation);
    } catch (GatewayException e) {
      if (e.kind() == Cause.UNKNOWN_OUTCOME) {
        // The acceptance may not be durable: the answer names the submit, not its query.
        throw unknownOutcome(chain, chain.nextSequence() - 1, e);
      }
      throw afterAcceptance(e, chain, correlation);
    }
    if (status == null
        || status.getCorrelation() != correlation
        || status.getNamespace() != chain.namespace()) {
      throw withQuery(
          QueryCode.EVIDENCE.failure("the native query status names another query"),
          chain,
          correlation);
    }
    switch (status.getState()) {
      case SUCCEEDED -> {
        if (status.getManifestSha256().size() != 32) {
          throw withQuery(
              QueryCode.EVIDENCE.failure("the succeeded query names no manifest digest"),
              chain,
              correlation);
        }
        if (sent.replayed()) {
          requireRetained(chain, access, correlation);
        }
        return new Admitted(
            correlation,
            chain.namespace(),
            chain.nextSequence(),
            status,
            status.getManifestSha256().toByteArray(),
            status.getTotalRows(),
            sent.replayed());
      }
      case FAILED -> {
        throw withQuery(QueryFailures.toException(status), chain, correlation).withBasis(basis);
      }
      case ACCEPTED ->
          throw withQuery(
              GatewayException.of(
                  Cause.DEADLINE,
                  "admission.deadline",
                  "the deadline passed while the accepted query runs; retry with the same"
                      + " sequence and SQL"),
              chain,
              correlation);
      default ->
          throw withQuery(
              QueryCode.EVIDENCE.failure("the native query status has no state"),
              chain,
              correlation);
    }
  }

  /**
   * A replay finds a result that may have been released since it first ran (retention, an
   * operator): its ticket would only redeem to RETIRED. The statement path answers that itself,
   * where the caller's next sequence is added to it. Replays only: a fresh result was just made.
   */
  private void requireRetained(CommandChain chain, ReadAccess access, long correlation) {
    try {
      client.readManifest(access, correlation);
    } catch (GatewayException e) {
      throw afterAcceptance(e, chain, correlation);
    }
  }

  /**
   * A read refused after the submit was accepted (a reload revoked the caller's inspect right)
   * is not "not admitted". A query the submit has just named for this principal and the engine
   * no longer knows was forgotten by the history sweep (a finished statement whose result was
   * released, or that failed): that is what a retry would be told, so it is said now.
   */
  private static GatewayException afterAcceptance(
      GatewayException e, CommandChain chain, long correlation) {
    if (e.queryCode() == QueryCode.UNKNOWN_RESULT) {
      e = QueryCode.HISTORY_PRUNED.failure("the accepted query's record was pruned")
          .withOutcome(Outcome.UNKNOWN)
          .withActions(Action.USE_NEXT_SEQUENCE);
    }
    GatewayException failed = withQuery(e, chain, correlation);
    return failed.outcome() == Outcome.NOT_ADMITTED ? Recovery.afterAdmission(failed) : failed;
  }

  private static GatewayException withQuery(
      GatewayException e, CommandChain chain, long correlation) {
    GatewayException staged = e.stage() != null ? e : e.at(Stage.ADMISSION);
    return staged.withIdentity(
        new Identity(chain.namespace(), correlation, chain.firstSequence(), null));
  }
}
