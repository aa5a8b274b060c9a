package io.transit.flight.server.cli;

import io.transit.flight.server.GatewayServer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SIGHUP's reloads. The JVM runs each signal's handler on a thread of its own, so two HUPs could
 * reload at once and leave the older file in force: here they run one at a time (this object's
 * monitor), the later one reading the file last. A HUP while the daemon starts (the engine's
 * open, {@code --warm-up}: minutes) is held, and its reload runs once the gateway serves.
 *
 * <p>Threads: {@link #requested} on the signal threads, {@link #serving} once on the main thread,
 * {@link #stopping} on the main thread and on the JVM's shutdown hook (whichever stops the
 * daemon; a second call changes nothing). Once the stop began no reload runs: one would install
 * rights through a journal the close is about to shut.
 */
final class Reloads {
  private static final Logger log = LoggerFactory.getLogger(Reloads.class);

  private final Consumer<GatewayServer> reload;
  private GatewayServer server; // @GuardedBy("this"): null until serving
  private boolean held; // @GuardedBy("this"): a HUP came before serving
  private boolean stopped; // @GuardedBy("this"): the stop began

  Reloads(Consumer<GatewayServer> reload) {
    this.reload = reload;
  }

  /** A SIGHUP: reloads the serving gateway, or holds the request until there is one. */
  synchronized void requested() {
    if (stopped) {
      log.info("SIGHUP during the stop: not reloaded");
      return;
    }
    if (server == null) {
      held = true; // logged once serving: a warm-up discards the log meanwhile
      return;
    }
    reload.accept(server);
  }

  /** The gateway serves: reloads from now on, the held one first. */
  synchronized void serving(GatewayServer serving) {
    server = serving;
    if (held) {
      held = false;
      log.info("SIGHUP received while starting: reading the configuration again");
      reload.accept(serving);
    }
  }

  /** The stop begins: waits for a reload under way, and runs none after it. */
  synchronized void stopping() {
    stopped = true;
    server = null;
  }
}
