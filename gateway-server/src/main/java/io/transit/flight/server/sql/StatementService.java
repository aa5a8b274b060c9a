package io.transit.flight.server.sql;

import io.transit.flight.admission.Admitted;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.ops.RequestRecord;
import io.transit.flight.ticket.StatementReference;
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
  private final GatewayState state;
  private final Deadlines deadlines;
  private final CompileGate compiler;

  StatementService(GatewayState state, Deadlines deadlines, CompileGate compiler) {
    this.state = state;
    this.deadlines = deadlines;
    this.compiler = compiler;
  }

  SchemaResult getSchema(CommandStatementQuery command, CallerBinding caller) {
    rejectTransaction(command);
    QueryPlan plan = compile(command, caller);
    return new SchemaResult(QueryCompiler.outputSchema(plan));
  }

  FlightInfo getFlightInfo(
      CommandStatementQuery command, FlightDescriptor descriptor, CallerBinding caller,
      List<String> sequenceValues) {
    LongSupplier next = () -> state.nativeClient().nextSequence(caller.principal());
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
    Admitted admitted;
    try {
      admitted = state.admission().admit(
          state.admissionRequest(caller, firstSequence, command.getQueryBytes().toByteArray(),
              deadlines.controlDeadlineNanos()));
    } catch (GatewayException e) {
      RequestRecord.refused(e);
      throw NextSequenceHint.tell(e, next);
    }
    RequestRecord.admitted(admitted.correlation(), replay);
    byte[] ticket = state.tickets().issue(
        state.scopeOf(caller), caller.declarationFingerprint(), state.ticketExpiryMillis(),
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
