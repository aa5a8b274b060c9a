/**
 * A DoGet result stream's life in the gateway, around the channel: the caller's share of live
 * streams ({@link io.transit.flight.server.stream.StreamShares}, taken before the channel
 * opens), the stream's data deadline ({@link io.transit.flight.server.stream.StreamDeadline}),
 * and the one path every response batch takes to the channel ({@link
 * io.transit.flight.server.stream.BatchSender}, with its {@link
 * io.transit.flight.server.stream.ResponseBudget}).
 *
 * <p>Threads: a stream's sender and budget are confined to its producer (T_caller); the stream
 * deadline is armed on the gRPC call's thread, fires on the deadline timer and only cancels the
 * channel; the stream shares are shared by all calls (their javadoc says how).
 */
package io.transit.flight.server.stream;
