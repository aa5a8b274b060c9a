package io.transit.flight.server.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.crypto.Ed25519;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StateDirectoryTest {
  @TempDir Path dir;

  @Test
  void generatesOwnerOnlySecretsOnceAndReloadsThem() throws Exception {
    StateDirectory s = new StateDirectory(dir.resolve("state"), new SecureRandom());
    s.prepare();
    Ed25519.KeyPair k1 = s.loadOrCreateKey(s.ticketKeyFile());
    Ed25519.KeyPair k2 = s.loadOrCreateKey(s.ticketKeyFile());
    assertArrayEquals(k1.publicKey().encoded(), k2.publicKey().encoded());
    Path cred = dir.resolve("state/credentials/a.token");
    String token = s.loadOrCreateCredential(cred);
    assertEquals(token, s.loadOrCreateCredential(cred));
    assertTrue(token.length() >= 32);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(cred)));
    assertEquals("rw-------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(s.ticketKeyFile())));
    assertEquals("rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("state"))));
  }

  @Test
  void refusesGroupOrOtherReadableSecrets() throws Exception {
    StateDirectory s = new StateDirectory(dir, new SecureRandom());
    s.prepare();
    s.loadOrCreateKey(s.ticketKeyFile());
    Files.setPosixFilePermissions(s.ticketKeyFile(), PosixFilePermissions.fromString("rw-r-----"));
    ConfigException e = assertThrows(ConfigException.class, () -> s.loadOrCreateKey(s.ticketKeyFile()));
    assertTrue(e.getMessage().contains("0600"), e.getMessage());
    Path cred = dir.resolve("credentials/x.token");
    s.loadOrCreateCredential(cred);
    Files.setPosixFilePermissions(cred, PosixFilePermissions.fromString("rw----r--"));
    assertThrows(ConfigException.class, () -> s.loadOrCreateCredential(cred));
  }

  @Test
  void refusesEqualCredentials() {
    ConfigException e = assertThrows(ConfigException.class, () -> StateDirectory.checkDistinct(
        Map.of("a", "tfg_same-token-same-token-same-token", "b", "tfg_same-token-same-token-same-token")));
    assertTrue(e.getMessage().contains("equal credentials"), e.getMessage());
    assertTrue(!e.getMessage().contains("same-token"), "never print a credential");
  }

  @Test
  void refusesMalformedKeyFiles() throws Exception {
    StateDirectory s = new StateDirectory(dir, new SecureRandom());
    s.prepare();
    Path key = dir.resolve("keys/bad.key");
    Files.writeString(key, "ed25519-seed-v1 AAAA\n");
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
    ConfigException e = assertThrows(ConfigException.class, () -> s.loadOrCreateKey(key));
    assertTrue(e.getMessage().contains("expected: 32"), e.getMessage());
  }
}
