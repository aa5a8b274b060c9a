package io.transit.flight.nativequery;

import java.util.Collection;

/**
 * The native system's operator surface, apart from the query client: what the gateway process
 * itself does to the engine, never on a caller's behalf. With {@link NativeQueryClient} it is
 * all the server sees of an engine, embedded or remote.
 *
 * <p>Thread-safe: {@link #updateRights} runs on the reload (signal) thread, {@link #release} on
 * whichever thread retires a result.
 */
public interface NativeQueryAdmin {
  /** Replaces every principal's rights at once (a configuration reload). */
  void updateRights(Collection<PrincipalRights> next);

  /** Releases a retained result: later reads fail with RETIRED. Returns false if unknown. */
  boolean release(long correlation);
}
