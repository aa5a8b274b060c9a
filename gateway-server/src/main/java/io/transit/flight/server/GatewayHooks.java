package io.transit.flight.server;

import io.transit.flight.nativequery.embedded.CommandFaults;
import java.time.Clock;

/**
 * The one seam through which tests change the daemon's behaviour: the engine's command faults,
 * the gateway's clock and whether the engine loads its publications. Production passes {@link
 * #NONE}; only the CLI passes anything else, and only when the test-only environment variable
 * names faults ({@link io.transit.flight.server.testing.TestFaults}).
 *
 * <p>Read once, on the main thread, while {@link GatewayServer#start} builds the daemon; the
 * returned faults and clock are then used from any thread and must be thread-safe.
 */
public interface GatewayHooks {
  /** No hook: the system clock, no faults, every publication loaded. */
  GatewayHooks NONE = new GatewayHooks() {
    @Override
    public String toString() {
      return "none";
    }
  };

  /** Faults the embedded engine consults around each command's journal record. */
  default CommandFaults engineFaults() {
    return CommandFaults.NONE;
  }

  /** The clock for ticket expiry and the authorization recheck, given the system's. */
  default Clock clock(Clock system) {
    return system;
  }

  /** Whether the engine opens with no publication (the gateway's bindings keep theirs). */
  default boolean enginePublicationsNone() {
    return false;
  }
}
