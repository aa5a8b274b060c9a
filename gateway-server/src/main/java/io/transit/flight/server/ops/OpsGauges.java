package io.transit.flight.server.ops;

import io.transit.flight.channel.StreamRegistry;
import io.transit.flight.nativequery.NativeQueryAdmin;
import io.transit.flight.server.transport.CallEnds;
import io.transit.flight.server.transport.ConnectionBudget;
import io.transit.flight.server.transport.Listeners;
import java.nio.file.Path;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Connects the daemon's components to {@link GatewayMetrics}: gauges read at scrape time and the
 * engine's journal-commit observer. Called once on the main thread while the daemon is built.
 */
public final class OpsGauges {
  private OpsGauges() {}

  public static void register(GatewayMetrics m, BufferAllocator allocator, StreamRegistry streams,
      CallEnds callEnds, ConnectionBudget connections, Listeners listeners, NativeQueryAdmin engine,
      Path segmentsDir) {
    m.gauge("transit.allocator.allocated.bytes", "bytes held in the root Arrow allocator",
        allocator, BufferAllocator::getAllocatedMemory);
    m.gauge("transit.allocator.limit.bytes", "the root Arrow allocator's budget "
        + "(limits.root_allocator_bytes)", allocator, BufferAllocator::getLimit);
    m.gauge("transit.streams.live", "DoGet result streams open now", streams,
        StreamRegistry::liveStreams);
    m.counter("transit.streams.reset.unread", "DoGet calls reset because their client did not "
        + "read their end within credit_stall_ms of the stream's close", callEnds,
        CallEnds::resets);
    m.gauge("transit.connections.live", "client connections holding a slot", connections,
        ConnectionBudget::live);
    m.counter("transit.connections.closed.frames", "connections closed (GOAWAY "
        + "ENHANCE_YOUR_CALM) for sending more HTTP/2 frames that carry no request, or making the "
        + "server reset more streams, than max_rst_frames_per_window allows", listeners,
        Listeners::closedForFrames);
    m.retained(segmentsDir);
    m.counter("transit.early.runs.adopted", "queries whose result an early run computed while "
        + "their chain was decided", engine, NativeQueryAdmin::earlyRunsAdopted);
    m.counter("transit.early.results.with.submit", "early results committed with their submit's "
        + "acceptance, in one durable commit (of transit.early.runs.adopted)", engine,
        NativeQueryAdmin::earlyResultsWithSubmit);
    m.gauge("transit.early.runs.running", "early runs executing or waiting for their submit now",
        engine, NativeQueryAdmin::earlyRunsRunning);
    m.counter("transit.journal.failures", "journal transactions that failed: an SQL error, a "
        + "lost connection, no connection within the timeout (an outage records no commit time)",
        engine, NativeQueryAdmin::journalFailures);
    engine.observeJournalCommits(m::journalCommit);
  }
}
