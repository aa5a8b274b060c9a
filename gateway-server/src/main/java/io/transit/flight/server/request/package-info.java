/**
 * What every Flight call meets before a producer runs, apart from authentication (in {@code
 * server.auth}): its time bound ({@link io.transit.flight.server.request.Deadlines}), its request
 * message parsed inside the call so that a malformed one is answered like any refusal ({@link
 * io.transit.flight.server.request.MalformedRequests}), the answer to a path no service serves
 * ({@link io.transit.flight.server.request.UnknownMethods}), and the rate-limited log of both
 * client faults ({@link io.transit.flight.server.request.ClientFaultLog}).
 *
 * <p>Threads: deadlines are read on the gRPC call's thread, where the call's context is current;
 * request parsing and the unknown-method answer run in each call's listener (gRPC's service
 * executor); the fault log is shared by all calls (its javadoc says how).
 */
package io.transit.flight.server.request;
