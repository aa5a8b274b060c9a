package io.transit.flight.nativequery;

import java.util.Collection;

/**
 * The native system's operator surface, apart from the query client: what the gateway process
 * itself does to the engine, never on a caller's behalf. With {@link NativeQueryClient} it is
 * all the server sees of an engine, embedded or remote.
 *
 * <p>Thread-safe: {@link #updateRights} runs on whichever thread installs a rights version (the
 * reload thread, or a call's thread that found a newer one in the ledger), {@link #release} on
 * whichever thread retires a result; the {@link #rightsLedger} is used from any thread.
 */
public interface NativeQueryAdmin {
  /** Replaces every principal's rights at once (a new rights version in force). */
  void updateRights(Collection<PrincipalRights> next);

  /** The deployment's rights in this engine's journal (shared by every replica on it). */
  RightsLedger rightsLedger();

  /** Releases a retained result: later reads fail with RETIRED. Returns false if unknown. */
  boolean release(long correlation);
}
