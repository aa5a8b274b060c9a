package io.transit.flight.server.sql;

import io.transit.flight.admission.AdmissionRequest;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.admission.Admitted;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Recovery;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.proto.Budgets;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.Authorization.Right;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.request.Deadlines;
import io.transit.flight.server.ops.AdmissionRecorder;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.TicketService;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandStatementQuery;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Statement GetSchema and GetFlightInfo. Both check the caller's current policy first — the
 * binding in force and its rights ({@link Authorization#current}), then the engine's
 * source/requester checks ({@link NativeQueryClient#checkAccess}) — so nothing is compiled, and
 * no schema or compile diagnostic disclosed, for a caller without the rights (profile: current
 * authorization precedes diagnostic disclosure). GetSchema then compiles and records nothing.
 * GetFlightInfo compiles (so anything outside the profile fails before a native command is
 * sent), then runs the signed admission chain from the caller's first sequence, waits within
 * the call's deadline for the retained result, and returns one endpoint with an FTK1 statement
 * ticket.
 *
 * <p>Compilation goes through the {@link CompileGate}: bounded per caller and gateway, in time,
 * and by cancellation. The admission's outcome (accepted, replayed or the refusal's kind) and
 * correlation go to the call's access-log record through the {@link AdmissionRecorder}, which
 * finds that per-call record in the call's gRPC Context (its class comment says why).
 *
 * <p>Threads: built once on the main thread by {@code GatewayServer}; {@link #getSchema} and
 * {@link #getFlightInfo} run on gRPC's service executor and may block within the call's deadline.
 * Nothing here is mutable.
 */
public final class StatementService {
  /** An admission sends commands, waits on the result's status and reads its manifest. */
  private static final Right[] ADMISSION_RIGHTS = {Right.SEND, Right.INSPECT, Right.READ};

  private final Authorization authorization;
  private final CompileGate compiler;
  private final AdmissionService admission;
  private final NativeQueryClient nativeClient;
  private final TicketService tickets;
  private final Budgets budgets;
  private final Deadlines deadlines;
  private final AdmissionRecorder recorder;

  public StatementService(Authorization authorization, CompileGate compiler,
      AdmissionService admission, NativeQueryClient nativeClient, TicketService tickets,
      Limits limits, Deadlines deadlines, AdmissionRecorder recorder) {
    this.authorization = authorization;
    this.compiler = compiler;
    this.admission = admission;
    this.nativeClient = nativeClient;
    this.tickets = tickets;
    // Limits are fixed at start (a reload that changes them is refused), so the budgets are too.
    this.budgets = Budgets.newBuilder()
        .setMaxResultRows(limits.maxResultRows())
        .setMaxResultBytes(limits.maxResultBytes())
        .setMaxSegmentBytes(limits.maxSegmentBytes())
        .setRowsPerSegment(limits.rowsPerSegment())
        .build();
    this.deadlines = deadlines;
    this.recorder = recorder;
  }

  /**
   * Policy (the read right of the binding in force, then the engine's source/requester check),
   * then compile, then the schema: a caller that may not read its Table learns neither whether
   * its SQL compiles nor what columns exist.
   */
  SchemaResult getSchema(CommandStatementQuery command, CallerBinding caller) {
    Authorization.Grant grant = authorization.current(caller, Right.READ);
    nativeClient.checkAccess(grant.readAccess(), grant.caller().table(), AccessUse.DISCLOSE);
    rejectTransaction(command);
    QueryPlan plan = compile(command, grant.caller(), deadlines.controlDeadlineNanos());
    return new SchemaResult(QueryCompiler.outputSchema(plan));
  }

  /**
   * Policy first (send, inspect and read rights of the binding in force, then the engine's
   * checks for an admission), then the sequence header, compile and admission; the policy is
   * checked once more before the ticket and the row count are disclosed, since admission may
   * have waited across a reload.
   */
  FlightInfo getFlightInfo(
      CommandStatementQuery command, FlightDescriptor descriptor, CallerBinding caller,
      List<String> sequenceValues) {
    // One bound for the whole call, taken once: compilation and admission share it (each taking
    // the default afresh would let the call run twice the default, and past the maximum).
    long deadlineNanos = deadlines.controlDeadlineNanos();
    // One grant for the whole call: the admission subject and the ticket scope come from the
    // same configuration even if a reload lands while admission waits.
    Authorization.Grant grant = authorization.current(caller, ADMISSION_RIGHTS);
    CallerBinding bound = grant.caller();
    nativeClient.checkAccess(grant.readAccess(), bound.table(), AccessUse.ADMIT);
    LongSupplier next = () -> nativeClient.nextSequence(bound.principal());
    long firstSequence;
    try {
      firstSequence = SequenceHeader.parse(sequenceValues);
    } catch (GatewayException e) {
      throw NextSequenceHint.tell(e, next);
    }
    rejectTransaction(command);
    QueryPlan plan = compile(command, bound, deadlineNanos);
    Schema schema = QueryCompiler.outputSchema(plan);
    Admitted admitted;
    try {
      admitted = admission.admit(new AdmissionRequest(grant.admissionSubject(), bound.table(),
          budgets, firstSequence, command.getQueryBytes().toByteArray(), deadlineNanos));
    } catch (GatewayException e) {
      recorder.refused(e);
      // Told only to a caller that still holds the rights, as a success is below: a failure's
      // facts describe the result (its rows, its bytes), and admission may have waited across a
      // reload that revoked them. Until 2026-12-07 a revoked caller learned them.
      try {
        authorization.current(bound, ADMISSION_RIGHTS);
      } catch (GatewayException revoked) {
        throw Recovery.afterAdmission(revoked);
      }
      throw NextSequenceHint.tell(e, next);
    }
    recorder.admitted(admitted.correlation(), admitted.replayed());
    byte[] ticket;
    try {
      // The binding the ticket is issued under must still be the one in force, with its rights,
      // and the ticket takes that configuration's scope and lifetime: admission may have waited
      // across a reload that changed deployment.ingress or ticket_ttl_ms.
      Authorization.Grant now = authorization.current(bound, ADMISSION_RIGHTS);
      ticket = tickets.issue(now.scope(), now.caller().declarationFingerprint(),
          authorization.ticketExpiryMillis(now),
          new StatementReference(admitted.correlation(), admitted.manifestSha256()));
    } catch (GatewayException e) {
      throw Recovery.afterAdmission(e);
    }
    return FlightInfo.builder(schema, descriptor, List.of(new FlightEndpoint(new Ticket(ticket))))
        .setRecords(admitted.totalRows())
        .setBytes(-1)
        .setOrdered(true)
        .setAppMetadata(admitted.appMetadataJson().getBytes(StandardCharsets.US_ASCII))
        .build();
  }

  private QueryPlan compile(CommandStatementQuery command, CallerBinding caller,
      long deadlineNanos) {
    return compiler.compile(caller.principal(), command.getQuery(), caller.table(),
        deadlineNanos);
  }

  private static void rejectTransaction(CommandStatementQuery command) {
    if (command.hasTransactionId()) {
      throw GatewayException.of(Cause.UNSUPPORTED, "flight.transactions_unsupported",
          "transactions are not supported");
    }
  }
}
