/**
 * The Flight streaming core: one DoGet result stream, its buffers and its threads.
 *
 * <p>Starting points:
 *
 * <ul>
 *   <li>{@link io.transit.flight.channel.StreamRegistry#open} — DoGet entry: a channel with its
 *       permit, child allocator and executor.
 *   <li>{@link io.transit.flight.channel.FlightOutboundHandler} — what a producer calls:
 *       {@code sendResponseBatch}, {@code completeStream}, {@code sendError}.
 *   <li>{@link io.transit.flight.channel.FlightServerChannel} — the only owner of the stream's
 *       Arrow buffers and gRPC call.
 *   <li>{@link io.transit.flight.channel.StreamExecutorPool} and {@link
 *       io.transit.flight.channel.StreamExecutor} — the per-stream single-writer executors and
 *       their draining shutdown.
 * </ul>
 *
 * <p>Thread rules: T_grpc (cancel, on-ready) never blocks; T_caller (producer workers) builds
 * source roots and waits in the readiness gate; T_exec (a stream's executor) is the only thread
 * that touches the stream root or calls the {@code ServerStreamListener}. {@code close()} may run
 * on any thread and only posts the root free to T_exec. See {@code docs/channel.md}.
 */
package io.transit.flight.channel;
