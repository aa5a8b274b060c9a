package io.transit.flight.channel;

import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.threads.ClaimOnce;
import io.transit.flight.threads.LastIdlePool;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The T_caller threads DoGet producers run on. Each started stream's body runs under {@link
 * FlightOutboundHandler#produce}, which makes the stream's one terminal call; a stream the pool
 * cannot run a producer for is ended with UNAVAILABLE {@code flight.producer_unavailable} instead.
 * That holds at shutdown too: the workers are a {@link LastIdlePool}, whose {@code shutdownNow}
 * cancels queued tasks, and a stream whose producer was still queued (more live streams than
 * {@code limits.producer_threads}, every worker stuck past the grace) would otherwise never get
 * its terminal call, never be released, and make the stop unclean.
 *
 * <p>Threads: {@link #start} from gRPC's service threads (DoGet); {@link #shutdown} and {@link
 * #shutdownNow} from the thread stopping the gateway. The pool owns no buffer: a stream's batches
 * belong to its channel from the hand-off.
 */
public final class ProducerPool {
  private static final Logger LOG = LoggerFactory.getLogger(ProducerPool.class);

  private final ExecutorService workers;
  private final FlightOutboundHandler handler;
  private final ClaimOnce producers = new ClaimOnce();

  /** At most {@code threads} daemon workers named {@code name-N}. */
  public ProducerPool(String name, int threads, FlightOutboundHandler handler) {
    this.workers = LastIdlePool.create(name, threads);
    this.handler = handler;
  }

  /**
   * Runs {@code body} for {@code channel} on a worker, or ends the stream at once when the pool
   * no longer takes work. Either way the stream gets exactly one terminal call.
   */
  public void start(FlightServerChannel channel, FlightOutboundHandler.ProducerBody body) {
    try {
      producers.execute(workers, () -> handler.produce(channel, body), () -> refuse(channel));
    } catch (RejectedExecutionException e) {
      refuse(channel);
    }
  }

  private void refuse(FlightServerChannel channel) {
    handler.sendError(channel, GatewayException.of(Cause.TRANSPORT,
        "flight.producer_unavailable", "the gateway is shutting down"));
  }

  /**
   * Takes no new producer, lets queued and running ones finish within {@code grace}, then
   * interrupts the running ones, ends the streams whose producer never started, and waits {@code
   * after} more.
   *
   * @return whether every worker stopped; false (logged) when one is still inside a call that
   *     ignores interrupts
   */
  public boolean shutdown(Duration grace, Duration after) {
    return LastIdlePool.stop(workers, "producer", grace, after, this::endStranded);
  }

  /** Interrupts running producers and ends at once the streams whose producer never started. */
  public void shutdownNow() {
    workers.shutdownNow();
    endStranded();
  }

  private void endStranded() {
    try {
      int stranded = producers.runStranded();
      if (stranded > 0) {
        LOG.warn("{} stream(s) whose producer never got a thread were ended at shutdown",
            stranded);
      }
    } catch (RuntimeException e) {
      // The stop goes on (its report says whether every stream was released).
      LOG.error("ending a stream whose producer never started failed", e);
    }
  }
}
