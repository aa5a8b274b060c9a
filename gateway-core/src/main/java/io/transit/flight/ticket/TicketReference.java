package io.transit.flight.ticket;

/**
 * What an FTK1 ticket refers to: a retained statement result ({@link StatementReference}, tag
 * 1) or a metadata command's finite result ({@link MetadataReference}, tag 2).
 */
public sealed interface TicketReference permits StatementReference, MetadataReference {

  /** The tag byte written before the reference in the ticket. */
  int tag();
}
