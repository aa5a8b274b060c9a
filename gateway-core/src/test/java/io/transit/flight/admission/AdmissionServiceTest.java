package io.transit.flight.admission;

import static io.transit.flight.admission.Fixtures.*;
import static org.junit.jupiter.api.Assertions.*;

import io.grpc.Status;
import io.transit.flight.crypto.Digests;
import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Basis;
import io.transit.flight.diagnostic.Budget;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.Stage;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.nativequery.ReadAccess;
import io.transit.flight.proto.Budgets;
import io.transit.flight.proto.NativeCommand;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class AdmissionServiceTest {
  private static final int PART_BYTES = 64;
  private static final String SQL = "SELECT id, fare FROM trips WHERE distance > 5";

  private final InMemoryNativeClient engine = new InMemoryNativeClient();
  private final AdmissionLimiter limiter = new AdmissionLimiter(8, 4);
  private final AdmissionService service =
      new AdmissionService(engine, limiter, new AdmissionConfig(8, 4, PART_BYTES));

  AdmissionServiceTest() {
    engine.register(PRINCIPAL, key().publicKey(), EPOCH, 1);
  }

  @AfterEach
  void everyPathReleasedItsPermit() {
    assertEquals(0, limiter.inFlight());
  }

  @Test
  void admitsAndNamesTheNextSequence() {
    Admitted first = service.admit(request(1, SQL));
    long commands = chainLength(caller(), 1, SQL, budgets());
    assertEquals(1, first.namespace());
    assertEquals(1 + commands, first.nextSequence());
    assertEquals(1 + commands, engine.nextSequence(PRINCIPAL));
    assertEquals(3, first.totalRows());
    assertFalse(first.replayed(), "recorded by this call");
    byte[] manifest = engine.readManifest(
        new ReadAccess(PRINCIPAL, true, ROLE, SOURCE), first.correlation());
    assertArrayEquals(Digests.sha256(manifest), first.manifestSha256());
    assertEquals("{\"version\":1,\"next_sequence\":" + (1 + commands) + "}", first.appMetadataJson());

    Admitted second = service.admit(request(first.nextSequence(), "SELECT id FROM trips"));
    assertEquals(first.nextSequence(), second.namespace());
    assertNotEquals(first.correlation(), second.correlation());
    assertEquals(2, engine.executions());
  }

  @Test
  void theBundleIsAnnouncedBeforeItsFirstCommandAndIsTheOneItsPartsUpload() {
    service.admit(request(1, SQL));
    assertEquals(1, engine.announcements().size());
    InMemoryNativeClient.Announcement a = engine.announcements().get(0);
    assertEquals(PRINCIPAL, a.principal());
    assertEquals(1, a.namespace(), "the namespace is the first sequence");
    assertEquals(0, a.commandsBefore(), "announced before anything was sent");
    ByteArrayOutputStream uploaded = new ByteArrayOutputStream();
    for (NativeCommand c : engine.sent()) {
      if (c.hasPart()) {
        uploaded.writeBytes(c.getPart().getData().toByteArray());
      }
    }
    assertArrayEquals(uploaded.toByteArray(), a.bundle());
  }

  @Test
  void replayAfterGatewayLossReturnsTheSameResultWithoutASecondExecution() {
    Admitted original = service.admit(request(1, SQL));
    int recorded = engine.recorded(PRINCIPAL);
    int sent = engine.sent().size();

    AdmissionService replacement =
        new AdmissionService(engine, new AdmissionLimiter(8, 4), new AdmissionConfig(8, 4, PART_BYTES));
    Admitted replayed = replacement.admit(request(1, SQL));

    assertFalse(original.replayed());
    assertTrue(replayed.replayed(), "the engine found the chain recorded");
    assertEquals(new Admitted(original.correlation(), original.namespace(),
        original.nextSequence(), original.status(), original.manifestSha256(),
        original.totalRows(), true), replayed);
    assertEquals(1, engine.executions());
    assertEquals(recorded, engine.recorded(PRINCIPAL));
    assertEquals(2 * sent, engine.sent().size());
    assertEquals(engine.sent().subList(0, sent), engine.sent().subList(sent, 2 * sent));
  }

  @Test
  void changedSqlAtTheSameFirstSequenceConflictsAtTheFirstCommand() {
    service.admit(request(1, SQL));
    int sent = engine.sent().size();
    GatewayException e = fails(Status.Code.ABORTED, () -> service.admit(request(1, "SELECT 1")));
    assertEquals("query.namespace_conflict", e.code());
    assertEquals(Long.valueOf(1), e.identity().firstSequence());
    assertEquals(Long.valueOf(1), e.identity().namespace());
    assertEquals(Long.valueOf(1), e.identity().nativeSequence());
    assertEquals(sent + 1, engine.sent().size());
    assertEquals(1, engine.executions());
  }

  @Test
  void roleOrEpochChangeCannotResumeTheOldUpload() {
    service.admit(request(1, SQL));
    AdmissionSubject otherRole = new AdmissionSubject(PRINCIPAL, key(), true, ROLE + 1, EPOCH, SERVICE);
    AdmissionSubject otherEpoch = new AdmissionSubject(PRINCIPAL, key(), true, ROLE, EPOCH + 1, SERVICE);
    for (AdmissionSubject changed : List.of(otherRole, otherEpoch)) {
      int sent = engine.sent().size();
      GatewayException e = fails(Status.Code.ABORTED,
          () -> service.admit(request(changed, 1, SQL, budgets(), inTenSeconds())));
      assertEquals("query.namespace_conflict", e.code());
      assertEquals(sent + 1, engine.sent().size());
    }
  }

  @Test
  void staleEpochIsRejectedAtSubmitThenTheRotatedBindingUsesANewSequence() {
    engine.rotateEpoch(PRINCIPAL, EPOCH + 1);
    long submit = chainLength(caller(), 1, SQL, budgets());
    GatewayException rejected = fails(Status.Code.PERMISSION_DENIED, () -> service.admit(request(1, SQL)));
    assertEquals("query.access_denied", rejected.code());
    assertEquals("admission", rejected.stage().wireName());
    assertEquals(Long.valueOf(1), rejected.identity().namespace());
    assertEquals(Long.valueOf(submit), rejected.identity().nativeSequence());
    // The journal's record is the witness; the bundle's declaration and the engine the basis.
    Witness witness = rejected.witness();
    assertEquals(Witness.Source.NATIVE_REJECTION, witness.source());
    assertEquals("query.access_denied", witness.code());
    assertEquals(Long.valueOf(submit), witness.nativeSequence());
    assertTrue(witness.commandSha256().matches("[0-9a-f]{64}"), witness.commandSha256());
    assertEquals(Basis.of(DeclarationFingerprint.of(table()), "transit-in-memory", "test"),
        rejected.basis());
    // Recorded, so not "not admitted" whatever the cause: the sequence is spent.
    assertEquals(Outcome.REJECTED, rejected.outcome());
    assertEquals(List.of(Action.CHECK_ACCESS, Action.USE_NEXT_SEQUENCE), rejected.actions());

    AdmissionSubject rotated = new AdmissionSubject(PRINCIPAL, key(), true, ROLE, EPOCH + 1, SERVICE);
    fails(Status.Code.ABORTED, () -> service.admit(request(rotated, 1, SQL, budgets(), inTenSeconds())));
    Admitted admitted =
        service.admit(request(rotated, submit + 1, SQL, budgets(), inTenSeconds()));
    assertEquals(submit + 1, admitted.namespace());
    assertEquals(1, engine.executions());
  }

  @Test
  void unknownOutcomeAfterRecordingNamesBothSequencesAndTheRetryCompletes() {
    engine.injectFault(InMemoryNativeClient.Fault.AFTER_RECORD, 3);
    GatewayException e = fails(Status.Code.UNAVAILABLE, () -> service.admit(request(1, SQL)));
    assertEquals("admission.unknown_outcome", e.code());
    assertEquals(Long.valueOf(1), e.identity().firstSequence());
    assertEquals(Long.valueOf(3), e.identity().nativeSequence());
    assertEquals(3, lastSentSequence());

    Admitted retried = service.admit(request(1, SQL));
    assertEquals(1, retried.namespace());
    assertTrue(retried.replayed(), "its first commands were recorded by the call that failed");
    assertEquals(1, engine.executions());
  }

  @Test
  void unknownOutcomeBeforeRecordingAtSubmitAlsoResolvesByRetry() {
    long submit = chainLength(caller(), 1, SQL, budgets());
    engine.injectFault(InMemoryNativeClient.Fault.BEFORE_RECORD, submit);
    GatewayException e = fails(Status.Code.UNAVAILABLE, () -> service.admit(request(1, SQL)));
    assertEquals(Long.valueOf(submit), e.identity().nativeSequence());
    assertEquals(0, engine.executions());
    service.admit(request(1, SQL));
    assertEquals(1, engine.executions());
  }

  @Test
  void aWaitThatCannotSyncTheAcceptanceNamesTheSubmitNotItsQuery() {
    long submit = chainLength(caller(), 1, SQL, budgets());
    engine.failNextAwait(new GatewayException(io.transit.flight.diagnostic.Cause.UNKNOWN_OUTCOME,
        "query.unknown_outcome", "the query's acceptance could not be made durable",
        new java.sql.SQLException("disk I/O error")));
    GatewayException e = fails(Status.Code.UNAVAILABLE, () -> service.admit(request(1, SQL)));
    assertEquals("admission.unknown_outcome", e.code());
    assertEquals(Long.valueOf(submit), e.identity().nativeSequence());
    assertEquals(null, e.identity().correlation(), "a query that may not survive is not named");
    Admitted retried = service.admit(request(1, SQL));
    assertEquals(1, retried.namespace());
    assertTrue(retried.replayed(), "its first commands were recorded by the call that failed");
    assertEquals(1, engine.executions());
  }

  @Test
  void deadlineWhileTheQueryRunsThenTheRetryReturnsTheResult() {
    engine.holdQueries();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
    GatewayException e = fails(Status.Code.DEADLINE_EXCEEDED,
        () -> service.admit(request(caller(), 1, SQL, budgets(), deadline)));
    assertEquals("admission.deadline", e.code());
    assertEquals(Long.valueOf(1), e.identity().namespace());
    assertNotNull(e.identity().correlation());
    int recorded = engine.recorded(PRINCIPAL);

    engine.release();
    Admitted retried = service.admit(request(1, SQL));
    assertEquals(e.identity().correlation(), Long.valueOf(retried.correlation()));
    assertEquals(1, engine.executions());
    assertEquals(recorded, engine.recorded(PRINCIPAL));
  }

  @Test
  void deadlinePassingBetweenCommandsNamesTheNextUnsentSequence() {
    AtomicLong now = new AtomicLong();
    AdmissionService stepping = new AdmissionService(
        engine, limiter, new AdmissionConfig(8, 4, PART_BYTES), () -> now.getAndAdd(1000));
    GatewayException e = fails(Status.Code.DEADLINE_EXCEEDED,
        () -> stepping.admit(request(caller(), 1, SQL, budgets(), 2500)));
    assertEquals("admission.deadline", e.code());
    assertEquals(Long.valueOf(1), e.identity().firstSequence());
    assertEquals(u64(4), e.facts().get("next_unsent_sequence"));
    assertEquals(3, engine.sent().size());

    service.admit(request(1, SQL));
    assertEquals(1, engine.executions());
  }

  @Test
  void aDeadlineBeforeTheFirstCommandIsNotAdmitted() {
    AdmissionService late = new AdmissionService(
        engine, limiter, new AdmissionConfig(8, 4, PART_BYTES), () -> 1000);
    GatewayException e = fails(Status.Code.DEADLINE_EXCEEDED,
        () -> late.admit(request(caller(), 1, SQL, budgets(), 0)));
    assertEquals("admission.deadline", e.code());
    // Until 2026-12-06 the cause's default: unknown, though nothing of the call was sent.
    assertEquals(Outcome.NOT_ADMITTED, e.outcome());
    assertTrue(engine.sent().isEmpty());
    // What the announcement started is withdrawn: no more of the chain comes in this call.
    assertEquals(List.of(List.of(PRINCIPAL, 1L)), engine.withdrawn());
  }

  @Test
  void anAccessFailureAfterTheFirstCommandIsNeverNotAdmitted() {
    // A reload revokes the send right mid-upload: the begin is recorded, the second command is
    // refused. Until 2026-12-06 the answer said not_admitted, as if nothing had reached the
    // journal; a client trusting it could send the statement again at a new sequence.
    engine.injectFault(InMemoryNativeClient.Fault.REVOKED, 2);
    GatewayException midUpload = fails(Status.Code.PERMISSION_DENIED,
        () -> service.admit(request(1, SQL)));
    assertEquals(Outcome.UNKNOWN, midUpload.outcome());
    assertEquals(List.of(Action.CHECK_ACCESS, Action.RETRY_SAME_SEQUENCE_AND_SQL),
        midUpload.actions());

    // The query was accepted; reading its status is then refused (the inspect right revoked).
    engine.failNextAwait(io.transit.flight.diagnostic.QueryCode.ACCESS_DENIED.failure(
        "the caller may no longer inspect"));
    GatewayException afterSubmit = fails(Status.Code.PERMISSION_DENIED,
        () -> service.admit(request(1, SQL)));
    assertEquals(Outcome.UNKNOWN, afterSubmit.outcome());
    assertEquals(List.of(Action.CHECK_ACCESS, Action.RETRY_SAME_SEQUENCE_AND_SQL),
        afterSubmit.actions());
    // Once access is back the same sequence and SQL answer: one execution.
    Admitted retried = service.admit(request(1, SQL));
    assertEquals(1, retried.namespace());
    assertEquals(1, engine.executions());
  }

  @Test
  void aQueryForgottenBeforeItsStatusIsReadIsHistoryPrunedNotAnAccessFailure() {
    // The history sweep forgets a finished statement between the retry's replayed submit and
    // its status read: the engine no longer knows the correlation the submit just named.
    service.admit(request(1, SQL));
    engine.failNextAwait(io.transit.flight.diagnostic.QueryCode.UNKNOWN_RESULT.failure(
        "no such query for this principal"));
    GatewayException e = fails(Status.Code.FAILED_PRECONDITION,
        () -> service.admit(request(1, SQL)));
    assertEquals("query.history_pruned", e.code());
    assertEquals(Outcome.UNKNOWN, e.outcome());
    assertEquals(List.of(Action.USE_NEXT_SEQUENCE), e.actions());
    assertEquals(1L, e.identity().firstSequence());
    assertEquals(1, engine.executions());
  }

  @Test
  void busyLimiterRefusesBeforeAnyCommand() {
    AdmissionLimiter full = new AdmissionLimiter(1, 1);
    AdmissionService busyService = new AdmissionService(engine, full, new AdmissionConfig(1, 1, 64));
    try (AdmissionLimiter.Permit other = full.tryAcquire(PRINCIPAL + 1)) {
      GatewayException e = fails(Status.Code.RESOURCE_EXHAUSTED, () -> busyService.admit(request(1, SQL)));
      assertEquals("admission.busy", e.code());
      assertEquals(0, engine.sent().size());
    }
    busyService.admit(request(1, SQL));
    assertEquals(0, full.inFlight());
  }

  @Test
  void sequenceAheadOfTheJournalIsAGap() {
    GatewayException e = fails(Status.Code.FAILED_PRECONDITION, () -> service.admit(request(5, SQL)));
    assertEquals("query.sequence_gap", e.code());
    assertEquals(u64(1), e.facts().get("expected_sequence"));
    assertEquals(Long.valueOf(5), e.identity().firstSequence());
    assertEquals(Long.valueOf(5), e.identity().namespace());
    assertEquals(1, engine.sent().size());
  }

  @Test
  void failedQueryKeepsItsStoredCodeAndStage() {
    Budgets tiny = budgets().toBuilder().setMaxResultRows(1).build();
    GatewayException e = fails(Status.Code.RESOURCE_EXHAUSTED,
        () -> service.admit(request(caller(), 1, SQL, tiny, inTenSeconds())));
    assertEquals("query.budget_exhausted", e.code());
    assertEquals("execution", e.stage().wireName());
    assertEquals(Long.valueOf(1), e.identity().namespace());
    assertNotNull(e.identity().correlation());
    assertEquals("result rows exceed max_result_rows", e.getMessage());
    assertEquals(new Witness(Witness.Source.NATIVE_FAILURE, Stage.EXECUTION,
        "query.budget_exhausted", null, e.identity().correlation(), null), e.witness());
    assertEquals(Basis.of(DeclarationFingerprint.of(table()), "transit-in-memory", "test"),
        e.basis());
    long rows = table().getColumnsCount();
    assertEquals(List.of(new Budget("max_result_rows", 1, rows)), e.budgets());
    assertEquals(Outcome.FAILED, e.outcome());
    assertEquals(List.of(Action.CHANGE_REQUEST, Action.USE_NEXT_SEQUENCE), e.actions());
  }

  @Test
  void sequenceOverflowIsAnInvalidCallerFieldBeforeAnyCommand() {
    GatewayException e = fails(Status.Code.INVALID_ARGUMENT, () -> service.admit(request(-2L, SQL)));
    assertEquals("admission.sequence_overflow", e.code());
    assertEquals(0, engine.sent().size());
    assertEquals(0, engine.announcements().size(), "nothing announced for a chain refused");
  }

  @Test
  void interruptedWaitIsCancelledAndKeepsTheInterrupt() {
    engine.holdQueries();
    Thread.currentThread().interrupt();
    try {
      GatewayException e = fails(Status.Code.CANCELLED, () -> service.admit(request(1, SQL)));
      assertEquals("admission.cancelled", e.code());
      assertTrue(Thread.currentThread().isInterrupted());
    } finally {
      Thread.interrupted();
    }
    engine.release();
    assertEquals(1, service.admit(request(1, SQL)).namespace());
    assertEquals(1, engine.executions());
  }

  private long lastSentSequence() {
    List<NativeCommand> sent = engine.sent();
    return sent.get(sent.size() - 1).getSequence();
  }

  private static long chainLength(AdmissionSubject caller, long first, String sql, Budgets budgets) {
    byte[] bundle = CanonicalBundle.build(caller, table(), budgets, sql(sql)).bytes();
    return CommandChain.derive(bundle, PRINCIPAL, key(), first, PART_BYTES).commands().size();
  }

  static AdmissionRequest request(long first, String sql) {
    return request(caller(), first, sql, budgets(), inTenSeconds());
  }

  static AdmissionRequest request(
      AdmissionSubject caller, long first, String sql, Budgets budgets, long deadline) {
    return new AdmissionRequest(caller, table(), budgets, first, sql(sql), deadline);
  }

  static long inTenSeconds() {
    return System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
  }

  static BigInteger u64(long v) {
    return new BigInteger(Long.toUnsignedString(v));
  }

  static GatewayException fails(Status.Code expected, Executable call) {
    GatewayException e = assertThrows(GatewayException.class, call);
    assertEquals(expected, e.kind().code(), () -> e.code() + ": " + e.getMessage());
    return e;
  }
}
