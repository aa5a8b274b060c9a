/**
 * Request plumbing of the Flight RPCs that is not SQL: call deadlines ({@link
 * io.transit.flight.server.flight.Deadlines}, {@link
 * io.transit.flight.server.flight.StreamDeadline}), a DoGet stream's hand-off ({@link
 * io.transit.flight.server.flight.BatchSender}, the one path every response batch takes, with its
 * {@link io.transit.flight.server.flight.ResponseBudget}), malformed request messages ({@link
 * io.transit.flight.server.flight.MalformedRequests}, logged by {@link
 * io.transit.flight.server.flight.ClientFaultLog}), paths no service serves ({@link
 * io.transit.flight.server.flight.UnknownMethods}) and each caller's share of live streams
 * ({@link io.transit.flight.server.flight.StreamShares}).
 *
 * <p>Threads: deadlines are read on gRPC's service executor; a stream's sender and budget are
 * confined to its producer (T_caller); the stream deadline fires on the deadline timer and only
 * cancels the channel. Request parsing runs in each call's listener; the fault log and the stream
 * shares are shared by all calls (their javadoc says how).
 */
package io.transit.flight.server.flight;
