package io.transit.flight.diagnostic;

import io.grpc.Status;

/**
 * The profile's status table, in code: every failure the gateway reports names one cause, and
 * the cause alone decides the gRPC status. {@code docs/status.md} carries the same table and a
 * test keeps the two equal.
 */
public enum Cause {
  UNAUTHENTICATED(Status.Code.UNAUTHENTICATED, "the caller presented no valid credential"),
  ARITHMETIC_OVERFLOW(Status.Code.OUT_OF_RANGE, "checked arithmetic overflowed"),
  BUDGET_EXHAUSTED(Status.Code.RESOURCE_EXHAUSTED, "bounded work or size was exhausted"),
  ADMISSION_BUSY(Status.Code.RESOURCE_EXHAUSTED, "the admission limiter refused before any native command"),
  ACCESS_DENIED(Status.Code.PERMISSION_DENIED, "policy, access, publisher or peer denial"),
  PRECONDITION(Status.Code.FAILED_PRECONDITION, "source, history or initialization precondition failed"),
  CELL_STATE(Status.Code.FAILED_PRECONDITION, "a missing, conflicted or mistyped result cell"),
  RETIRED(Status.Code.FAILED_PRECONDITION, "the retained result was released or retired"),
  SEQUENCE_GAP(Status.Code.FAILED_PRECONDITION, "the sequence is ahead of the next expected native sequence"),
  TICKET_EXPIRED(Status.Code.FAILED_PRECONDITION, "the ticket's expiry has passed"),
  NAMESPACE_CONFLICT(Status.Code.ABORTED, "different bytes at a used native sequence or namespace"),
  UNSUPPORTED(Status.Code.UNIMPLEMENTED, "the operation or query is outside the profile"),
  INTEGER_OUT_OF_RANGE(Status.Code.UNIMPLEMENTED, "an unsigned value above int64 maximum cannot be sent as int64"),
  INVALID_REQUEST(Status.Code.INVALID_ARGUMENT, "invalid request, plan or type input"),
  INVALID_CALLER_FIELD(Status.Code.INVALID_ARGUMENT, "an invalid caller field, header or cursor"),
  INVALID_SEQUENCE(Status.Code.INVALID_ARGUMENT, "the sequence header is missing, repeated or not canonical decimal"),
  INVALID_TICKET(Status.Code.INVALID_ARGUMENT, "the ticket's size, layout, definition or signature is invalid"),
  TICKET_SCOPE(Status.Code.PERMISSION_DENIED, "the ticket's scope does not match the caller's current binding"),
  INVALID_PROTOBUF(Status.Code.INVALID_ARGUMENT, "a command is not a valid protobuf Any of a known type"),
  CANCELLED(Status.Code.CANCELLED, "the call was cancelled"),
  DEADLINE(Status.Code.DEADLINE_EXCEEDED, "the call's deadline passed; accepted native work continues"),
  EVIDENCE(Status.Code.DATA_LOSS, "retained manifest, segment, digest, coverage or Arrow/IPC evidence is invalid"),
  UNKNOWN_OUTCOME(Status.Code.UNAVAILABLE, "a native command's outcome could not be known"),
  TRANSPORT(Status.Code.UNAVAILABLE, "allocation or transport failure"),
  CLOCK(Status.Code.UNAVAILABLE, "the clock gave an invalid observation"),
  INTERNAL(Status.Code.INTERNAL, "a defect in the gateway");

  private final Status.Code code;
  private final String meaning;

  Cause(Status.Code code, String meaning) {
    this.code = code;
    this.meaning = meaning;
  }

  public Status.Code code() {
    return code;
  }

  public String meaning() {
    return meaning;
  }
}
