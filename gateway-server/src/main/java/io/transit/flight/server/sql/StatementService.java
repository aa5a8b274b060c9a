package io.transit.flight.server.sql;

import io.transit.flight.admission.AdmissionRequest;
import io.transit.flight.admission.AdmissionService;
import io.transit.flight.admission.Admitted;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.proto.Budgets;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.flight.Deadlines;
import io.transit.flight.server.flight.SequenceHeader;
import io.transit.flight.server.ops.RequestRecord;
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
 * Statement GetSchema and GetFlightInfo. GetSchema compiles and records nothing. GetFlightInfo
 * compiles first (so anything outside the profile fails before a native command is sent), then
 * runs the signed admission chain from the caller's first sequence, waits within the call's
 * deadline for the retained result, and returns one endpoint with an FTK1 statement ticket.
 *
 * <p>Runs on gRPC's service executor; may block within the call's deadline. Compilation goes
 * through the {@link CompileGate}: bounded per caller and gateway, in time, and by cancellation.
 */
final class StatementService {
  private final Authorization authorization;
  private final CompileGate compiler;
  private final AdmissionService admission;
  private final NativeQueryClient nativeClient;
  private final TicketService tickets;
  private final Budgets budgets;
  private final Deadlines deadlines;

  StatementService(Authorization authorization, CompileGate compiler, AdmissionService admission,
      NativeQueryClient nativeClient, TicketService tickets, Limits limits, Deadlines deadlines) {
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
  }

  SchemaResult getSchema(CommandStatementQuery command, CallerBinding caller) {
    rejectTransaction(command);
    QueryPlan plan = compile(command, caller);
    return new SchemaResult(QueryCompiler.outputSchema(plan));
  }

  FlightInfo getFlightInfo(
      CommandStatementQuery command, FlightDescriptor descriptor, CallerBinding caller,
      List<String> sequenceValues) {
    LongSupplier next = () -> nativeClient.nextSequence(caller.principal());
    long firstSequence;
    try {
      firstSequence = SequenceHeader.parse(sequenceValues);
    } catch (GatewayException e) {
      throw NextSequenceHint.tell(e, next);
    }
    rejectTransaction(command);
    QueryPlan plan = compile(command, caller);
    Schema schema = QueryCompiler.outputSchema(plan);
    // ops: a sequence the journal already passed is a retry, replayed rather than recorded.
    boolean replay = Long.compareUnsigned(firstSequence, next.getAsLong()) < 0;
    // One grant for the whole call: the admission subject and the ticket scope come from the
    // same configuration even if a reload lands while admission waits.
    Authorization.Grant grant = authorization.grant(caller);
    Admitted admitted;
    try {
      admitted = admission.admit(new AdmissionRequest(grant.admissionSubject(), caller.table(),
          budgets, firstSequence, command.getQueryBytes().toByteArray(),
          deadlines.controlDeadlineNanos()));
    } catch (GatewayException e) {
      RequestRecord.refused(e);
      throw NextSequenceHint.tell(e, next);
    }
    RequestRecord.admitted(admitted.correlation(), replay);
    byte[] ticket = tickets.issue(grant.scope(), caller.declarationFingerprint(),
        authorization.ticketExpiryMillis(grant),
        new StatementReference(admitted.correlation(), admitted.manifestSha256()));
    return FlightInfo.builder(schema, descriptor, List.of(new FlightEndpoint(new Ticket(ticket))))
        .setRecords(admitted.totalRows())
        .setBytes(-1)
        .setOrdered(true)
        .setAppMetadata(admitted.appMetadataJson().getBytes(StandardCharsets.US_ASCII))
        .build();
  }

  private QueryPlan compile(CommandStatementQuery command, CallerBinding caller) {
    return compiler.compile(caller.principal(), command.getQuery(), caller.table(),
        deadlines.controlDeadlineNanos());
  }

  private static void rejectTransaction(CommandStatementQuery command) {
    if (command.hasTransactionId()) {
      throw GatewayException.of(Cause.UNSUPPORTED, "flight.transactions_unsupported",
          "transactions are not supported");
    }
  }
}
