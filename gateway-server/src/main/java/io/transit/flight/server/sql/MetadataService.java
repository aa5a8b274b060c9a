package io.transit.flight.server.sql;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.transit.flight.catalog.CatalogResults;
import io.transit.flight.catalog.IpcBytes;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.crypto.Digests;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.server.auth.Authorization;
import io.transit.flight.server.auth.CallerBinding;
import io.transit.flight.server.config.Limits;
import io.transit.flight.server.flight.BatchSender;
import io.transit.flight.server.flight.ResponseBudget;
import io.transit.flight.ticket.TicketService;
import org.apache.arrow.memory.BufferAllocator;
import io.transit.flight.ticket.Ftk1Layout;
import io.transit.flight.ticket.MetadataReference;
import io.transit.flight.ticket.VerifiedTicket;
import java.security.MessageDigest;
import java.util.List;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.Ticket;

/**
 * Catalog metadata (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes, GetSqlInfo).
 * GetFlightInfo computes the finite result under the caller's current authorization and issues
 * an FTK1 metadata ticket holding the original command bytes and the result's SHA-256. DoGet
 * recomputes the result under the then-current authorization and refuses it when the digest
 * differs — a ticket can never disclose more than the caller could see now. Discovery never
 * starts an application query.
 */
final class MetadataService {
  /** Command bytes a metadata ticket can carry (the 1263-byte ticket bound leaves 1019). */
  static final int MAX_COMMAND_BYTES = Ftk1Layout.MAX_METADATA_COMMAND_BYTES;

  private final CatalogResults catalog;
  private final TicketService tickets;
  private final Authorization authorization;
  private final FlightOutboundHandler handler;
  private final BufferAllocator rootAllocator;
  private final Limits limits;

  /** {@code rootAllocator} holds GetFlightInfo's transient catalog result, freed before return. */
  MetadataService(CatalogResults catalog, TicketService tickets, Authorization authorization,
      FlightOutboundHandler handler, BufferAllocator rootAllocator, Limits limits) {
    this.catalog = catalog;
    this.tickets = tickets;
    this.authorization = authorization;
    this.handler = handler;
    this.rootAllocator = rootAllocator;
    this.limits = limits;
  }

  /** Runs on the gRPC service executor. */
  FlightInfo getFlightInfo(Any command, FlightDescriptor descriptor, CallerBinding caller) {
    byte[] commandBytes = descriptor.getCommand();
    if (commandBytes.length > MAX_COMMAND_BYTES) {
      throw GatewayException.of(Cause.INVALID_REQUEST, "flight.command_too_large",
          "catalog command has " + commandBytes.length + " bytes (limit " + MAX_COMMAND_BYTES + ")")
          .with("limit", MAX_COMMAND_BYTES).with("required", commandBytes.length);
    }
    Authorization.Grant grant = authorization.grant(caller);
    byte[] result = catalog.encode(command, caller.table(), rootAllocator);
    // The count from the batch header: decoding the whole result again would only free it.
    long rows = IpcBytes.rowCount(result);
    byte[] ticket = tickets.issue(grant.scope(), caller.declarationFingerprint(),
        authorization.ticketExpiryMillis(grant),
        new MetadataReference(commandBytes, Digests.sha256(result)));
    return FlightInfo.builder(CatalogResults.schemaOf(command), descriptor,
            List.of(new FlightEndpoint(new Ticket(ticket))))
        .setRecords(rows)
        .setBytes(result.length)
        .build();
  }

  /**
   * Runs on T_caller inside the handler's produce: recompute, compare the digest, send the one
   * batch through the same {@link BatchSender} as statement results (the handler completes or
   * errors the stream).
   */
  void stream(FlightServerChannel channel, CallerBinding caller, VerifiedTicket ticket) {
    MetadataReference ref = (MetadataReference) ticket.reference();
    CallerBinding current = authorization.recheck(caller, ticket).caller();
    Any command;
    try {
      command = Any.parseFrom(ref.command());
    } catch (InvalidProtocolBufferException e) {
      throw new GatewayException(Cause.INVALID_PROTOBUF, "flight.invalid_command",
          "ticket command is not a protobuf Any", e);
    }
    byte[] result = catalog.encode(command, current.table(), channel.allocator());
    if (!MessageDigest.isEqual(Digests.sha256(result), ref.resultSha256())) {
      throw GatewayException.of(Cause.PRECONDITION, "catalog.changed",
          "the catalog result changed since the ticket was issued; call GetFlightInfo again");
    }
    new BatchSender(handler, channel, new ResponseBudget(limits.maxResponseBytesPerStream()),
        () -> authorization.recheck(caller, ticket))
        .send(IpcBytes.read(result, channel.allocator()));
  }
}
