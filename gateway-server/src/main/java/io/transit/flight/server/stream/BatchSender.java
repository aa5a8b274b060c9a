package io.transit.flight.server.stream;

import io.transit.flight.channel.FlightOutboundHandler;
import io.transit.flight.channel.FlightServerChannel;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Outcome;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * The one hand-off of every DoGet stream, statement and metadata alike: each batch waits once in
 * the channel's readiness gate (inside {@link FlightOutboundHandler#sendResponseBatch}), then
 * passes the caller's authorization recheck, then is charged to the stream's {@link
 * ResponseBudget}, and only then is handed to the stream's executor.
 *
 * <p>Ownership: {@link #send} takes the batch on entry, on every outcome. A batch refused by the
 * budget or the recheck is freed once, by the handler ({@code releaseUnsent}); neither check
 * frees anything.
 *
 * <p>One instance per stream, used only by its producer on T_caller.
 */
public final class BatchSender {
  /** The authorization recheck at a disclosure boundary; throws to refuse. */
  @FunctionalInterface
  public interface Recheck {
    void recheck();
  }

  private final FlightOutboundHandler handler;
  private final FlightServerChannel channel;
  private final ResponseBudget budget;
  private final Recheck recheck;
  private long handedOff; // T_caller: batches the channel took past both checks

  public BatchSender(FlightOutboundHandler handler, FlightServerChannel channel,
      ResponseBudget budget, Recheck recheck) {
    this.handler = handler;
    this.channel = channel;
    this.budget = budget;
    this.recheck = recheck;
  }

  /**
   * T_caller: hands {@code batch} (built in {@code channel.allocator()}) to the channel, which
   * owns it from entry. Checked after the gate wait, so a producer parked by backpressure across
   * a revocation or an expiry never discloses the batch it held. Returns once the stream has room
   * for the producer's next batch (with the gateway's one resident batch: once this one is
   * written and freed), so the producer builds the next only then.
   *
   * @throws RuntimeException the budget's or the recheck's refusal, or the channel's failure
   */
  public void send(VectorSchemaRoot batch) {
    handler.sendResponseBatch(channel, batch, null, this::check);
    handedOff++;
  }

  /**
   * T_caller: {@link #send} for the stream's last batch; returns right after the hand-off (see
   * {@link FlightOutboundHandler#sendLastResponseBatch}), so the producer's terminal call queues
   * behind the batch. Same ownership and failures.
   */
  public void sendLast(VectorSchemaRoot batch) {
    handler.sendLastResponseBatch(channel, batch, null, this::check);
    handedOff++;
  }

  /**
   * T_caller: {@code e}, the failure that ends this stream, as the caller must read it: once a
   * batch was handed off, what it holds is a prefix, never a complete result, whatever the cause
   * (a revocation, an expiry, a budget, bad evidence), so the outcome is {@code incomplete}.
   */
  public GatewayException ending(GatewayException e) {
    return handedOff > 0 ? e.withOutcome(Outcome.INCOMPLETE) : e;
  }

  private void check(VectorSchemaRoot batch) {
    // The right first: a caller revoked while its producer was parked learns nothing of the
    // batch, not even its size through the budget's required fact.
    recheck.recheck();
    budget.charge(batch);
  }
}
