package io.transit.flight.nativequery;

/**
 * The deployment's rights as the native journal records them: a versioned document (its format is
 * the gateway's; the ledger only stores, compares and returns it). On a shared journal every
 * replica reads the same ledger, so a version one replica records is the one every replica
 * decides under (docs/deployment.md "Shared rights").
 *
 * <p>Any thread. Each method is one journal transaction; a journal that cannot be read or written
 * fails UNAVAILABLE {@code query.journal_unavailable} ({@link
 * io.transit.flight.diagnostic.GatewayException}), never an answer from an earlier read.
 */
public interface RightsLedger {
  /** A recorded version: epoch 0 with an empty document when none was ever recorded. */
  record Version(long epoch, byte[] document) {}

  /**
   * Records {@code document} as the current rights unless it already is, and returns the epoch in
   * force once the commit returned. Concurrent publishes of one document on any replica record it
   * once.
   */
  long publish(byte[] document);

  /** The current epoch: one single-row read. */
  long epoch();

  /** The current version with its document. */
  Version current();
}
