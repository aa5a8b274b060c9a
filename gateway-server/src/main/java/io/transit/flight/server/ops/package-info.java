/**
 * What an operator runs the daemon with: the {@code grpc.health.v1} service, Prometheus metrics
 * and their listener, the access log and authentication-failure log, and Logback's setup.
 *
 * <p>Starting points: {@link io.transit.flight.server.ops.Operations} (owned by the daemon),
 * {@link io.transit.flight.server.ops.RpcObserver} (one record per RPC, from stream open to close:
 * access log and metrics), {@link io.transit.flight.server.ops.AdmissionRecorder} (the statement
 * path's admission outcome into its call's record, which travels in the call's gRPC Context),
 * {@link io.transit.flight.server.ops.GatewayMetrics} (every meter),
 * {@link io.transit.flight.server.ops.OpsSettings} (the configuration's {@code ops} section).
 *
 * <p>Threads: RPC observation runs on gRPC's transport and executor threads and touches only
 * per-call records and thread-safe meters; health status changes come from the main thread
 * (serving) and the stopping thread (draining); the metrics listener has one thread of its own.
 * docs/operations.md describes every metric and log field.
 */
package io.transit.flight.server.ops;
