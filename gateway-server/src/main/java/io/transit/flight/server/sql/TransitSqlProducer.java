package io.transit.flight.server.sql;

import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.diagnostic.ErrorMapper;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.Authorization.Right;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.request.Deadlines;
import io.transit.flight.server.stream.StreamDeadline;
import io.transit.flight.server.stream.StreamShares;
import io.transit.flight.server.transport.CallEnds;
import io.transit.flight.ticket.Ftk1Layout;
import io.transit.flight.ticket.TicketService;
import com.google.protobuf.Any;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.ProducerPool;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.auth.CallerContext;
import io.transit.flight.ticket.MetadataReference;
import io.transit.flight.ticket.StatementReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.ActionType;
import org.apache.arrow.flight.CloseSessionRequest;
import org.apache.arrow.flight.CloseSessionResult;
import org.apache.arrow.flight.Criteria;
import org.apache.arrow.flight.FlightConstants;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.GetSessionOptionsRequest;
import org.apache.arrow.flight.GetSessionOptionsResult;
import org.apache.arrow.flight.PollInfo;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.SessionOptionValue;
import org.apache.arrow.flight.SessionOptionValueFactory;
import org.apache.arrow.flight.SetSessionOptionsRequest;
import org.apache.arrow.flight.SetSessionOptionsResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.sql.FlightSqlProducer;
import org.apache.arrow.flight.sql.FlightSqlUtils;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandStatementQuery;

/**
 * The Flight SQL surface. Dispatch is explicit: statement queries and the five catalog commands
 * are served; every other Flight SQL command, action and RPC answers UNIMPLEMENTED (see
 * {@link UnimplementedSqlProducer}); ListActions is empty.
 *
 * <p>Current authorization precedes disclosure: each path checks the caller's binding in force
 * and its rights ({@link Authorization#current}) before it compiles, computes, verifies a ticket
 * or answers UNIMPLEMENTED for a query-bearing command (see docs/security.md).
 *
 * <p>Threads: built once on the main thread by {@code GatewayServer}, which also builds the
 * services and bounds it dispatches to. Unary entry points run on gRPC's service executor.
 * DoGet's entry verifies the ticket, takes the caller's stream share ({@link
 * StreamShares#acquire}), opens the stream's channel, bounds it ({@link StreamDeadline#bound},
 * {@link CallEnds#bound}) and hands production to the T_caller pool ({@link ProducerPool#start});
 * it never streams on the gRPC thread. Every failure leaves through the ErrorMapper, so callers
 * always get the status table's code, a bounded message and the diagnostic trailer.
 */
public final class TransitSqlProducer extends UnimplementedSqlProducer {
  public static final String NEXT_SEQUENCE_OPTION = "transit.next_sequence";

  private static final Set<String> SESSION_ACTIONS = Set.of(
      FlightConstants.GET_SESSION_OPTIONS.getType(),
      FlightConstants.SET_SESSION_OPTIONS.getType(),
      FlightConstants.CLOSE_SESSION.getType());

  /** Actions whose body carries SQL or a plan: refused only after the policy check. */
  private static final Set<String> QUERY_ACTIONS = Set.of(
      FlightSqlUtils.FLIGHT_SQL_CREATE_PREPARED_STATEMENT.getType(),
      FlightSqlUtils.FLIGHT_SQL_CREATE_PREPARED_SUBSTRAIT_PLAN.getType());

  /** Flight SQL's actions and Flight's cancel/renew actions: the profile excludes them all. */
  private static final Set<String> UNIMPLEMENTED_ACTIONS = unimplementedActions();

  private static Set<String> unimplementedActions() {
    Set<String> types = new java.util.HashSet<>();
    FlightSqlUtils.FLIGHT_SQL_ACTIONS.forEach(a -> types.add(a.getType()));
    types.add(FlightConstants.CANCEL_FLIGHT_INFO.getType());
    types.add(FlightConstants.RENEW_FLIGHT_ENDPOINT.getType());
    types.add("CancelQuery");
    return Set.copyOf(types);
  }

  private final Authorization authorization;
  private final TicketService tickets;
  private final NativeQueryClient nativeClient;
  private final StreamRegistry streams;
  private final FlightOutboundHandler handler;
  private final ProducerPool producers;
  private final StatementService statements;
  private final MetadataService metadata;
  private final ResultStreamer results;
  private final Deadlines deadlines;
  private final ScheduledExecutorService timer;
  private final StreamShares shares;
  private final CallEnds callEnds;
  private final long creditStallMs;

  /**
   * {@code statements}, {@code metadata} and {@code results} serve the commands and tickets this
   * dispatches; {@code timer} runs the data deadlines of DoGet streams (see {@link
   * StreamDeadline}) and the resets of calls whose client does not read their end (see {@link
   * CallEnds}); {@code producers} is the T_caller pool; {@code shares} holds each caller's share
   * of the live streams.
   */
  public TransitSqlProducer(ErrorMapper errors, Authorization authorization,
      TicketService tickets, NativeQueryClient nativeClient, StatementService statements,
      MetadataService metadata, ResultStreamer results, StreamRegistry streams,
      FlightOutboundHandler handler, ProducerPool producers, StreamShares shares, Limits limits,
      Deadlines deadlines, ScheduledExecutorService timer, CallEnds callEnds) {
    super(errors);
    this.authorization = authorization;
    this.tickets = tickets;
    this.nativeClient = nativeClient;
    this.streams = streams;
    this.handler = handler;
    this.producers = producers;
    this.statements = statements;
    this.metadata = metadata;
    this.results = results;
    this.deadlines = deadlines;
    this.timer = timer;
    this.shares = shares;
    this.callEnds = callEnds;
    this.creditStallMs = limits.creditStallMs();
  }

  @Override
  public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
    try {
      CallerBinding caller = CallerContext.caller();
      Any command = RequestBodies.command(descriptor);
      if (command.is(CommandStatementQuery.class)) {
        return statements.getFlightInfo(
            RequestBodies.unpack(command, CommandStatementQuery.class), descriptor,
            caller, CallerContext.sequenceValues());
      }
      String name = RequestBodies.requireFlightSqlCommand(command);
      if (CatalogResults.isCatalogCommand(command)) {
        return metadata.getFlightInfo(command, descriptor, caller);
      }
      throw unimplementedAfterPolicy(caller, name);
    } catch (Throwable t) {
      throw errors.toGrpc(t);
    }
  }

  @Override
  public SchemaResult getSchema(CallContext context, FlightDescriptor descriptor) {
    try {
      CallerBinding caller = CallerContext.caller();
      Any command = RequestBodies.command(descriptor);
      if (command.is(CommandStatementQuery.class)) {
        return statements.getSchema(
            RequestBodies.unpack(command, CommandStatementQuery.class), caller);
      }
      String name = RequestBodies.requireFlightSqlCommand(command);
      if (CatalogResults.isCatalogCommand(command)) {
        return metadata.getSchema(command, caller);
      }
      throw unimplementedAfterPolicy(caller, name);
    } catch (Throwable t) {
      throw errors.toGrpc(t);
    }
  }

  @Override
  public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
    CallerBinding caller;
    VerifiedTicket verified;
    try {
      // Policy first: a caller without the rights redeeming it needs learns nothing of the
      // ticket, not even whether it verifies. A statement result is read through its manifest,
      // which the engine discloses only to an inspecting caller.
      byte[] bytes = ticket.getBytes();
      Authorization.Grant grant = Ftk1Layout.namesStatement(bytes)
          ? authorization.current(CallerContext.caller(), Right.READ, Right.INSPECT)
          : authorization.current(CallerContext.caller(), Right.READ);
      caller = grant.caller();
      verified = tickets.verify(bytes, grant.scope(), caller.declarationFingerprint());
    } catch (Throwable t) {
      listener.error(errors.toGrpc(t));
      return;
    }
    CallEnds.Call call = callEnds.current();
    FlightServerChannel channel;
    Runnable share = null;
    try {
      share = shares.acquire(caller.name());
      // Given back when the stream is released, not when it closes: a cancelled stream whose
      // producer is still inside a read keeps its permit and memory until then, and a caller
      // that could reopen at once would take every permit from the others.
      // Released once gRPC reports the call over too: until then it may hold the last batch.
      channel = streams.open(listener, errors::toGrpc, share, call.ended());
    } catch (Throwable t) {
      if (share != null) {
        share.run();
      }
      listener.error(errors.toGrpc(t));
      return;
    }
    FlightOutboundHandler.ProducerBody body;
    if (verified.reference() instanceof StatementReference) {
      body = ch -> results.stream(ch, caller, verified);
    } else if (verified.reference() instanceof MetadataReference) {
      body = ch -> metadata.stream(ch, caller, verified);
    } else {
      body = ch -> {
        throw GatewayException.of(Cause.INVALID_TICKET, "ticket.layout", "unknown ticket reference");
      };
    }
    try {
      StreamDeadline.bound(channel, deadlines, timer);
      callEnds.bound(channel, call, timer, creditStallMs);
      // The stream gets its one terminal call whatever the body does, or if it never runs.
      producers.start(channel, body);
    } catch (Throwable t) {
      // Opened, so it must end here if nothing will run for it (a thread that could not be
      // made, the timer refusing): else its permit, share and memory stay taken for good. A
      // second terminal call, had the producer started after all, is ignored by the channel.
      handler.sendError(channel, t);
    }
  }

  /**
   * UNIMPLEMENTED for a command or action that carries a query (prepared statements, Substrait,
   * type info, keys), once the caller's current binding holds the read right: an unauthorized
   * caller gets PERMISSION_DENIED, whatever it sent, exactly as for the supported commands.
   */
  private GatewayException unimplementedAfterPolicy(CallerBinding caller, String what) {
    authorization.current(caller, Right.READ);
    return unimplemented(what);
  }

  @Override
  public void listActions(CallContext context, StreamListener<ActionType> listener) {
    listener.onCompleted();
  }

  @Override
  public void listFlights(CallContext context, Criteria criteria, StreamListener<FlightInfo> listener) {
    listener.onError(errors.toGrpc(unimplemented("ListFlights")));
  }

  @Override
  public PollInfo pollFlightInfo(CallContext context, FlightDescriptor descriptor) {
    throw errors.toGrpc(unimplemented("PollFlightInfo"));
  }

  @Override
  public Runnable acceptPut(CallContext context, FlightStream stream, StreamListener<PutResult> ack) {
    return () -> ack.onError(errors.toGrpc(unimplemented("DoPut")));
  }

  @Override
  public void doExchange(CallContext context, FlightStream reader, ServerStreamListener writer) {
    writer.error(errors.toGrpc(unimplemented("DoExchange")));
  }

  /**
   * Session actions (caller capabilities) are served; every other Flight SQL or Flight action
   * answers UNIMPLEMENTED before its body is even parsed; an action type nobody defines is
   * INVALID_ARGUMENT.
   */
  @Override
  public void doAction(CallContext context, Action action, StreamListener<Result> listener) {
    try {
      CallerContext.caller();
      String type = action.getType();
      if (SESSION_ACTIONS.contains(type)) {
        RequestBodies.checkSessionAction(action);
        super.doAction(context, action, listener);
      } else if (UNIMPLEMENTED_ACTIONS.contains(type)) {
        throw QUERY_ACTIONS.contains(type) ? unimplementedAfterPolicy(CallerContext.caller(), type)
            : unimplemented(type);
      } else {
        throw GatewayException.of(Cause.INVALID_REQUEST, "flight.unknown_action",
            "unknown action type")
            .with(io.transit.flight.query.SafeText.fact("action", type)); // caller text: cut, escaped
      }
    } catch (Throwable t) {
      listener.onError(errors.toGrpc(t));
    }
  }

  /**
   * Caller capabilities: read-only options of the authenticated caller — today its next native
   * sequence, for clients (ADBC) that cannot read FlightInfo.app_metadata. No session exists.
   */
  @Override
  public void getSessionOptions(GetSessionOptionsRequest request, CallContext context,
      StreamListener<GetSessionOptionsResult> listener) {
    try {
      CallerBinding caller = CallerContext.caller();
      long next = nativeClient.nextSequence(caller.principal());
      Map<String, SessionOptionValue> options =
          Map.of(NEXT_SEQUENCE_OPTION, SessionOptionValueFactory.makeSessionOptionValue(next));
      listener.onNext(new GetSessionOptionsResult(options));
      listener.onCompleted();
    } catch (Throwable t) {
      listener.onError(errors.toGrpc(t));
    }
  }

  /** Every option is read-only: each requested name is refused individually. */
  @Override
  public void setSessionOptions(SetSessionOptionsRequest request, CallContext context,
      StreamListener<SetSessionOptionsResult> listener) {
    try {
      CallerContext.caller();
      Map<String, SetSessionOptionsResult.Error> errs = new java.util.HashMap<>();
      for (String name : request.getSessionOptions().keySet()) {
        errs.put(name, new SetSessionOptionsResult.Error(NEXT_SEQUENCE_OPTION.equals(name)
            ? SetSessionOptionsResult.ErrorValue.INVALID_VALUE
            : SetSessionOptionsResult.ErrorValue.INVALID_NAME));
      }
      listener.onNext(new SetSessionOptionsResult(errs));
      listener.onCompleted();
    } catch (Throwable t) {
      listener.onError(errors.toGrpc(t));
    }
  }

  /** No server-side session exists, so closing one always succeeds. */
  @Override
  public void closeSession(CloseSessionRequest request, CallContext context,
      StreamListener<CloseSessionResult> listener) {
    listener.onNext(new CloseSessionResult(CloseSessionResult.Status.CLOSED));
    listener.onCompleted();
  }
}
