package io.transit.flight.server.sql;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.catalog.IpcBytes;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Action;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.NativeQueryClient;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.Authorization.Right;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.stream.BatchSender;
import io.transit.flight.server.stream.ResponseBudget;
import io.transit.flight.ticket.TicketService;
import org.apache.arrow.memory.BufferAllocator;
import io.transit.flight.ticket.Ftk1Layout;
import io.transit.flight.ticket.MetadataReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.security.MessageDigest;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.Ticket;

/**
 * Catalog metadata (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes, GetSqlInfo).
 * GetFlightInfo checks the caller's current policy (binding in force, read right), asks the
 * engine whether the caller's principal may see its Table now (the source/requester checks of
 * an admission: a Table it may not see is neither listed nor counted), computes the finite
 * result and issues an FTK1 metadata ticket holding the original command bytes and the result's
 * SHA-256. DoGet recomputes the result under the then-current authorization and the engine's
 * then-current check, and refuses it when the digest differs — a ticket can never disclose more
 * than the caller could see now. Discovery never starts an application query.
 *
 * <p>Threads: GetFlightInfo and GetSchema on the gRPC service executor, {@link #stream} on a
 * T_caller worker; both ask the (thread-safe) engine client. Nothing here is mutable.
 */
public final class MetadataService {
  /** Command bytes a metadata ticket can carry (the 1263-byte ticket bound leaves 1019). */
  static final int MAX_COMMAND_BYTES = Ftk1Layout.MAX_METADATA_COMMAND_BYTES;

  private final CatalogResults catalog;
  private final TicketService tickets;
  private final Authorization authorization;
  private final NativeQueryClient nativeClient;
  private final FlightOutboundHandler handler;
  private final BufferAllocator rootAllocator;
  private final Limits limits;

  /** {@code rootAllocator} holds GetFlightInfo's transient catalog result, freed before return. */
  public MetadataService(CatalogResults catalog, TicketService tickets, Authorization authorization,
      NativeQueryClient nativeClient, FlightOutboundHandler handler, BufferAllocator rootAllocator,
      Limits limits) {
    this.catalog = catalog;
    this.tickets = tickets;
    this.authorization = authorization;
    this.nativeClient = nativeClient;
    this.handler = handler;
    this.rootAllocator = rootAllocator;
    this.limits = limits;
  }

  /**
   * Runs on the gRPC service executor. Policy first — the binding in force must hold the read
   * right, as redeeming the ticket will require — then the engine's source/requester check
   * decides whether the caller's Table is listed at all; only then is the result computed,
   * counted and ticketed.
   */
  FlightInfo getFlightInfo(Any command, FlightDescriptor descriptor, CallerBinding caller) {
    Authorization.Grant grant = authorization.current(caller, Right.READ);
    byte[] commandBytes = descriptor.getCommand();
    if (commandBytes.length > MAX_COMMAND_BYTES) {
      throw GatewayException.of(Cause.INVALID_REQUEST, "flight.command_too_large",
          "catalog command has " + commandBytes.length + " bytes (limit " + MAX_COMMAND_BYTES + ")")
          .with("limit", MAX_COMMAND_BYTES).with("required", commandBytes.length);
    }
    CallerBinding bound = grant.caller();
    byte[] result = catalog.encode(command, visible(grant), rootAllocator);
    // The count from the batch header: decoding the whole result again would only free it.
    long rows = IpcBytes.rowCount(result);
    byte[] ticket = tickets.issue(grant.scope(), bound.declarationFingerprint(),
        authorization.ticketExpiryMillis(grant),
        new MetadataReference(commandBytes, Digests.sha256(result)));
    return FlightInfo.builder(CatalogResults.schemaOf(command), descriptor,
            List.of(new FlightEndpoint(new Ticket(ticket))))
        .setRecords(rows)
        .setBytes(result.length)
        .build();
  }

  /** GetSchema of a catalog command: its reference schema, after the same policy check. */
  SchemaResult getSchema(Any command, CallerBinding caller) {
    authorization.current(caller, Right.READ);
    return new SchemaResult(CatalogResults.schemaOf(command));
  }

  /**
   * The caller's Table when the engine's source/requester checks (those a statement's admission
   * makes) let its principal see it now; otherwise none, and the Table is neither listed nor
   * counted. Other engine failures (the journal unreachable) are failures, not an empty catalog.
   */
  private Optional<TableDeclaration> visible(Authorization.Grant grant) {
    TableDeclaration table = grant.caller().table();
    try {
      nativeClient.checkAccess(grant.readAccess(), table, AccessUse.DISCLOSE);
      return Optional.of(table);
    } catch (GatewayException e) {
      if (e.queryCode() == QueryCode.ACCESS_DENIED
          || e.queryCode() == QueryCode.SOURCE_UNAVAILABLE) {
        return Optional.empty();
      }
      throw e;
    }
  }

  /**
   * Runs on T_caller inside the handler's produce: recompute, compare the digest, send the one
   * batch through the same {@link BatchSender} as statement results (the handler completes or
   * errors the stream).
   */
  void stream(FlightServerChannel channel, CallerBinding caller, VerifiedTicket ticket) {
    MetadataReference ref = (MetadataReference) ticket.reference();
    Authorization.Grant current = authorization.recheck(caller, ticket);
    Any command;
    try {
      command = Any.parseFrom(ref.command());
    } catch (InvalidProtocolBufferException e) {
      throw new GatewayException(Cause.INVALID_PROTOBUF, "flight.invalid_command",
          "ticket command is not a protobuf Any", e);
    }
    byte[] result = catalog.encode(command, visible(current), channel.allocator());
    if (!MessageDigest.isEqual(Digests.sha256(result), ref.resultSha256())) {
      throw GatewayException.of(Cause.PRECONDITION, "catalog.changed",
          "the catalog result changed since the ticket was issued; call GetFlightInfo again")
          .withOutcome(Outcome.NOT_ADMITTED)
          .withActions(Action.REISSUE_WITH_GETFLIGHTINFO);
    }
    new BatchSender(handler, channel, new ResponseBudget(limits.maxResponseBytesPerStream()),
        () -> authorization.recheck(caller, ticket))
        .sendLast(IpcBytes.read(result, channel.allocator()));
  }
}
