package io.transit.flight.server.config;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.transit.flight.admission.AdmissionConfig;
import io.transit.flight.nativequery.embedded.DuckSettings;

/**
 * Every budget the daemon enforces, with its default. A null field in JSON (or an absent one)
 * takes the default; {@link ConfigLoader} rejects values outside each field's range. See
 * docs/limits.md.
 */
@JsonIgnoreProperties(ignoreUnknown = false)
public record Limits(
    @JsonProperty("max_connections") Integer maxConnections,
    @JsonProperty("max_inbound_message_bytes") Integer maxInboundMessageBytes,
    @JsonProperty("max_inbound_metadata_bytes") Integer maxInboundMetadataBytes,
    @JsonProperty("max_live_streams") Integer maxLiveStreams,
    @JsonProperty("admission_per_gateway") Integer admissionPerGateway,
    @JsonProperty("admission_per_caller") Integer admissionPerCaller,
    @JsonProperty("root_allocator_bytes") Long rootAllocatorBytes,
    @JsonProperty("stream_allocator_bytes") Long streamAllocatorBytes,
    @JsonProperty("control_deadline_default_ms") Long controlDeadlineDefaultMs,
    @JsonProperty("control_deadline_max_ms") Long controlDeadlineMaxMs,
    @JsonProperty("credit_stall_ms") Long creditStallMs,
    @JsonProperty("rows_per_segment") Integer rowsPerSegment,
    @JsonProperty("max_segment_bytes") Long maxSegmentBytes,
    @JsonProperty("max_result_rows") Long maxResultRows,
    @JsonProperty("max_result_bytes") Long maxResultBytes,
    @JsonProperty("upload_part_bytes") Integer uploadPartBytes,
    @JsonProperty("diagnostic_metadata_bytes") Integer diagnosticMetadataBytes,
    @JsonProperty("producer_threads") Integer producerThreads,
    @JsonProperty("writer_threads") Integer writerThreads,
    @JsonProperty("data_deadline_default_ms") Long dataDeadlineDefaultMs,
    @JsonProperty("data_deadline_max_ms") Long dataDeadlineMaxMs,
    @JsonProperty("max_response_bytes_per_stream") Long maxResponseBytesPerStream,
    @JsonProperty("handshake_timeout_ms") Long handshakeTimeoutMs,
    @JsonProperty("keepalive_time_ms") Long keepaliveTimeMs,
    @JsonProperty("keepalive_timeout_ms") Long keepaliveTimeoutMs,
    @JsonProperty("permit_keepalive_time_ms") Long permitKeepaliveTimeMs,
    @JsonProperty("max_connection_idle_ms") Long maxConnectionIdleMs,
    @JsonProperty("max_connection_age_ms") Long maxConnectionAgeMs,
    @JsonProperty("max_connection_age_grace_ms") Long maxConnectionAgeGraceMs,
    @JsonProperty("compile_per_gateway") Integer compilePerGateway,
    @JsonProperty("compile_per_caller") Integer compilePerCaller,
    @JsonProperty("compile_timeout_ms") Long compileTimeoutMs,
    @JsonProperty("max_live_streams_per_caller") Integer maxLiveStreamsPerCaller,
    @JsonProperty("max_rst_frames_per_window") Integer maxRstFramesPerWindow,
    @JsonProperty("rst_frames_window_ms") Long rstFramesWindowMs,
    @JsonProperty("unauthenticated_connection_ms") Long unauthenticatedConnectionMs) {

  public static Limits defaults() {
    return new Limits(null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null, null, null).withDefaults();
  }

  /** This record with every absent field set to its documented default. */
  public Limits withDefaults() {
    int streams = or(maxLiveStreams, 64);
    return new Limits(
        or(maxConnections, 256),
        or(maxInboundMessageBytes, 16 * 1024),
        or(maxInboundMetadataBytes, 8 * 1024),
        streams,
        or(admissionPerGateway, AdmissionConfig.DEFAULT_MAX_IN_FLIGHT),
        or(admissionPerCaller, AdmissionConfig.DEFAULT_MAX_IN_FLIGHT_PER_CALLER),
        or(rootAllocatorBytes, 1L << 30),
        or(streamAllocatorBytes, 64L << 20),
        or(controlDeadlineDefaultMs, 60_000L),
        or(controlDeadlineMaxMs, 600_000L),
        or(creditStallMs, 30_000L),
        or(rowsPerSegment, 65_536),
        or(maxSegmentBytes, 16L << 20),
        or(maxResultRows, 100_000_000L),
        or(maxResultBytes, 8L << 30),
        or(uploadPartBytes, 4096),
        or(diagnosticMetadataBytes, 6144),
        // One producer per live stream: a producer parked for a slow reader must not hold up
        // another stream (the credit-stall budget bounds how long it parks).
        or(producerThreads, streams),
        or(writerThreads, Math.max(2, DuckSettings.PROCESSORS)),
        or(dataDeadlineDefaultMs, 600_000L),
        or(dataDeadlineMaxMs, 3_600_000L),
        or(maxResponseBytesPerStream, 4L << 30),
        or(handshakeTimeoutMs, 20_000L),
        or(keepaliveTimeMs, 120_000L),
        or(keepaliveTimeoutMs, 20_000L),
        or(permitKeepaliveTimeMs, 60_000L),
        or(maxConnectionIdleMs, 300_000L),
        or(maxConnectionAgeMs, 7_200_000L),
        // Long enough for a DoGet started just before the age limit to run to its deadline.
        or(maxConnectionAgeGraceMs, or(dataDeadlineMaxMs, 3_600_000L)),
        // Parses in flight: far above what honest callers need (a parse takes milliseconds),
        // low enough that the service pool keeps threads for everyone else.
        or(compilePerGateway, 8),
        or(compilePerCaller, 2),
        or(compileTimeoutMs, 2_000L),
        // A quarter of the streams: one caller can never hold them all (issue 14 finding 4).
        or(maxLiveStreamsPerCaller, Math.max(1, streams / 4)),
        // HTTP/2 rapid reset: a client resetting more streams than this per window loses its
        // connection. Honest clients reset a stream when they cancel a call, far below it.
        // grpcio sends one RST_STREAM per cancelled call; hundreds in a burst are legitimate.
        or(maxRstFramesPerWindow, 1000),
        or(rstFramesWindowMs, 10_000L),
        // Long enough for a client's TLS handshake and first call on a loaded host; short
        // enough that connection-only peers cannot hold max_connections slots (finding 3).
        or(unauthenticatedConnectionMs, 10_000L));
  }

  private static <T> T or(T v, T d) {
    return v != null ? v : d;
  }
}
