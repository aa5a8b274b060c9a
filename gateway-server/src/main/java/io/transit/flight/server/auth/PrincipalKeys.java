package io.transit.flight.server.auth;

import io.transit.flight.crypto.Ed25519;
import io.transit.flight.nativequery.RightsLedger;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import java.util.List;
import java.util.Map;

/**
 * Whether this replica's principal key files may be used under the journal's current rights. A
 * principal's admission stream is its key's: the journal keeps each accepted command's digest,
 * signature included, so a retry signed with another key is another command (ABORTED {@code
 * query.namespace_conflict}, action {@code use_next_sequence}), and a client that follows the
 * action runs the statement a second time. So a missing key may be generated only for a principal
 * the journal's rights do not name, and an existing key must be the one they record (a document
 * recorded before 2026-12-07 records none: the principal's presence alone counts then).
 *
 * <p>Checked at start once the engine opened, before the rights are recorded, and at a reload
 * before any secret is written; on a shared journal every replica checks against the one document.
 * Main and signal threads.
 */
public final class PrincipalKeys {
  private PrincipalKeys() {}

  /**
   * Refuses {@code cfg} when a caller's principal key file is missing or holds another key
   * than the journal's current rights record for its principal, naming the file. {@code onFile}:
   * the keys the callers' files held when the snapshot was built, by caller name (a caller
   * missing there would have its key generated).
   *
   * @throws io.transit.flight.diagnostic.GatewayException UNAVAILABLE {@code
   *     query.journal_unavailable} when the journal's rights cannot be read
   */
  public static void check(RightsLedger ledger, ResolvedConfig cfg,
      Map<String, Ed25519.KeyPair> onFile) throws ConfigException {
    var recorded = RightsDocument.decode(ledger.current().document()).values();
    List<ResolvedConfig.Caller> callers = cfg.callers();
    for (int i = 0; i < callers.size(); i++) {
      ResolvedConfig.Caller c = callers.get(i);
      List<RightsDocument.Entry> known = recorded.stream()
          .filter(e -> e.principal() == c.principal()).toList();
      if (known.isEmpty()) {
        continue; // never named: a key generated now signs the principal's first statement
      }
      String at = "callers[" + i + "].principal_key_file: " + c.principalKeyFile();
      String principal = Long.toUnsignedString(c.principal());
      Ed25519.KeyPair key = onFile.get(c.name());
      if (key == null) {
        throw new ConfigException(at + " is missing, but the journal's rights name principal "
            + principal + ": its accepted statements were signed with the lost key, and a new"
            + " one would run their retries again; restore the file from a backup of the state"
            + " directory, or give caller " + c.name() + " a new principal id");
      }
      String digest = RightsDocument.keyDigest(key);
      for (RightsDocument.Entry e : known) {
        if (e.keySha256() != null && !e.keySha256().equals(digest)) {
          throw new ConfigException(at + " holds another key than the one the journal's rights"
              + " record for principal " + principal + " (public key SHA-256 "
              + e.keySha256() + "); restore the file the principal was used"
              + " with (every replica holds the same keys/), or give caller " + c.name()
              + " a new principal id");
        }
      }
    }
  }
}
