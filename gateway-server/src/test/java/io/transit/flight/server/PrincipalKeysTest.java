package io.transit.flight.server;

import static io.transit.flight.server.TestBindings.caller;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.embedded.JournalRights;
import io.transit.flight.server.auth.PrincipalKeys;
import io.transit.flight.server.config.ConfigException;
import io.transit.flight.server.config.ResolvedConfig;
import io.transit.flight.server.config.StateDirectory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A principal key is generated only for a principal the journal's rights do not name, through
 * the daemon's own composition ({@link GatewayServer}, port 0, its SQLite journal): a key lost or
 * replaced after the principal was recorded refuses the start and the reload, naming the file,
 * and writes nothing; a caller new to the journal still gets its key. Until 2026-12-07 a lost key
 * was silently generated again, and a retry of an accepted statement, signed with the new key,
 * conflicted with its record (a client following the conflict's action ran it twice).
 */
class PrincipalKeysTest {
  @TempDir Path dir;
  private TestBindings t;
  private Path keyA;

  @BeforeEach
  void prepare() throws Exception {
    t = new TestBindings(dir);
    t.writeData(3);
    keyA = dir.resolve("state/keys/a.key");
  }

  @Test
  void aLostKeyOfARecordedPrincipalRefusesReloadAndStartAndANewCallerGetsItsKey()
      throws Exception {
    ResolvedConfig first = t.config(3, caller("a", 10, true)).withPort(0);
    ResolvedConfig added;
    try (GatewayServer g = GatewayServer.start(first)) {
      byte[] kept = Files.readAllBytes(keyA);
      Files.delete(keyA);
      ConfigException reload = assertThrows(ConfigException.class, () -> g.reload(first));
      assertNamesTheFileAndTheRemedy(reload);
      assertFalse(Files.exists(keyA), "a refused reload writes no key");

      restore(kept);
      added = t.config(3, caller("a", 10, true), caller("b", 11, true)).withPort(0);
      g.reload(added);
      assertTrue(Files.exists(dir.resolve("state/keys/b.key")), "a new caller's key is generated");
    }
    Files.delete(keyA);
    ConfigException start = assertThrows(ConfigException.class, () -> GatewayServer.start(added));
    assertNamesTheFileAndTheRemedy(start);
    assertFalse(Files.exists(keyA), "a refused start writes no key");
  }

  @Test
  void aReplacedKeyOfARecordedPrincipalRefusesTheStart() throws Exception {
    ResolvedConfig cfg = t.config(3, caller("a", 10, true)).withPort(0);
    GatewayServer.start(cfg).close();
    byte[] kept = Files.readAllBytes(keyA);
    Files.delete(keyA);
    new StateDirectory(dir.resolve("state"), new SecureRandom()).loadOrCreateKey(keyA);
    ConfigException e = assertThrows(ConfigException.class, () -> GatewayServer.start(cfg));
    assertTrue(e.getMessage().contains(keyA.toString())
        && e.getMessage().contains("another key"), e.getMessage());
    restore(kept);
    GatewayServer.start(cfg).close();
  }

  /**
   * Rights recorded before they named each principal's key: any key file is accepted (the next
   * record names it), but a missing one is still refused, its principal being named.
   */
  @Test
  void rightsRecordedBeforeKeysWereNamedStillRefuseAMissingKey() throws Exception {
    ResolvedConfig cfg = t.config(3, caller("a", 10, true));
    t.snapshot(cfg); // writes a's key
    try (JournalRights ledger = JournalRights.openEmbedded(dir.resolve("journal.sqlite"))) {
      ledger.publish(("{\"version\":1,\"callers\":[{\"name\":\"a\",\"principal\":\"10\","
          + "\"publication\":\"p\",\"role\":\"\",\"send\":true,\"inspect\":true,\"read\":true}]}")
          .getBytes(StandardCharsets.UTF_8));
      PrincipalKeys.check(ledger, cfg,
          Map.of("a", StateDirectory.existingKey(keyA).orElseThrow()));
      // The key file missing when the snapshot was built: its key would be generated.
      assertNamesTheFileAndTheRemedy(
          assertThrows(ConfigException.class, () -> PrincipalKeys.check(ledger, cfg, Map.of())));
      // A principal the rights do not name may have its key generated.
      PrincipalKeys.check(ledger, t.config(3, caller("a", 12, true)), Map.of());
      assertEquals(1, ledger.current().epoch());
    }
  }

  /** Puts {@code seed} back in a's key file, as a restore from a backup would (mode 0600). */
  private void restore(byte[] seed) throws Exception {
    Files.write(keyA, seed);
    Files.setPosixFilePermissions(keyA, PosixFilePermissions.fromString("rw-------"));
  }

  private void assertNamesTheFileAndTheRemedy(ConfigException e) {
    String m = e.getMessage();
    assertTrue(m.contains(keyA.toString()) && m.contains("missing")
        && m.contains("restore the file from a backup") && m.contains("principal 10"), m);
  }
}
