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
  void tightenRestrictsDirectoriesAndEngineFilesButNotSecrets() throws Exception {
    Path root = dir.resolve("state");
    StateDirectory s = new StateDirectory(root, new SecureRandom());
    s.prepare();
    Path segments = Files.createDirectories(s.engineDir().resolve("segments"));
    Path journal = Files.writeString(s.engineDir().resolve("journal.sqlite"), "j");
    Path segment = Files.writeString(segments.resolve("1.seg"), "s");
    Path key = Files.writeString(root.resolve("keys/other.key"), "k");
    for (Path p : new Path[] {root, s.engineDir(), segments}) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    for (Path p : new Path[] {journal, segment, key}) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
    }
    java.util.List<String> changed = s.tighten();
    assertEquals(5, changed.size(), changed::toString);
    assertTrue(changed.contains(journal + ": mode rw-r--r-- restricted to rw-------"), changed::toString);
    for (Path p : new Path[] {root, s.engineDir(), segments}) {
      assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
    }
    for (Path p : new Path[] {journal, segment}) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
    }
    // A readable secret is refused where it is read, never silently fixed.
    assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
    assertEquals(java.util.List.of(), s.tighten());
  }

  @Test
  void aStateDirectoryThatIsALinkIsJudgedByItsTarget() throws Exception {
    Path target = dir.resolve("real");
    StateDirectory real = new StateDirectory(target, new SecureRandom());
    real.prepare();
    real.tighten();
    Path link = Files.createSymbolicLink(dir.resolve("link"), target);
    StateDirectory viaLink = new StateDirectory(link, new SecureRandom());
    assertEquals(java.util.List.of(), viaLink.tighten(),
        "a private target is not reported loosened at every start");
    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
    assertEquals(java.util.List.of(link + ": mode rwxr-xr-x restricted to rwx------"),
        viaLink.tighten());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
  }

  @Test
  void tightenSkipsFilesTheEngineRemovesWhileItWalks() throws Exception {
    StateDirectory s = new StateDirectory(dir.resolve("state"), new SecureRandom());
    s.prepare();
    Path segments = Files.createDirectories(s.engineDir().resolve("segments"));
    // The engine's writers at the second pass: temporary files and directories that come and go.
    var stop = new java.util.concurrent.atomic.AtomicBoolean();
    Thread churn = new Thread(() -> {
      for (long i = 0; !stop.get(); i++) {
        try {
          Path d = Files.createDirectories(segments.resolve("spill-" + (i % 4)));
          Path f = Files.writeString(d.resolve("part-" + i + ".tmp"), "x");
          Files.delete(f);
          Files.delete(d);
        } catch (java.io.IOException e) {
          // A walk held the directory open for a moment; the next round goes on.
        }
      }
    });
    churn.start();
    try {
      long end = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(2);
      int walks = 0;
      while (System.nanoTime() - end < 0) {
        s.tighten(); // never refused for a path that vanished
        walks++;
      }
      assertTrue(walks > 10, "walks: " + walks);
    } finally {
      stop.set(true);
      churn.join(10_000);
    }
  }

  @Test
  void aReplacedFileIsWholeWithItsModeAndLeavesNoTemporary() throws Exception {
    Path f = dir.resolve("gateway.json");
    Files.writeString(f, "{\"old\": true, \"longer\": \"than the new content\"}");
    Files.writeString(dir.resolve("gateway.json.tmp"), "left by a killed init");
    StateDirectory.replaceDurably(f, "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8),
        PosixFilePermissions.fromString("rw-------"));
    assertEquals("{}", Files.readString(f));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    assertTrue(Files.notExists(dir.resolve("gateway.json.tmp")));
  }

  @Test
  void oneLockPerStateDirectoryNamingTheHolder() throws Exception {
    Files.createDirectories(dir.resolve("s"));
    String pid = Long.toString(ProcessHandle.current().pid());
    try (StateLock lock = StateLock.acquire(dir.resolve("s"))) {
      assertEquals(pid, Files.readString(dir.resolve("s/gateway.lock")).strip());
      ConfigException e = assertThrows(StateLock.StateDirectoryBusyException.class,
          () -> StateLock.acquire(dir.resolve("s")));
      assertTrue(e.getMessage().contains("(pid " + pid + ")"), e.getMessage());
    }
    StateLock.acquire(dir.resolve("s")).close();
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

  @Test
  void existingSecretsAreRefusedAsAtStartAndMissingOnesAreNeitherRefusedNorCreated()
      throws Exception {
    Path root = dir.resolve("state");
    StateDirectory s = new StateDirectory(root, new SecureRandom());
    Path cred = root.resolve("credentials/a.token");
    assertTrue(StateDirectory.existingKey(s.ticketKeyFile()).isEmpty());
    assertTrue(StateDirectory.existingCredential(cred).isEmpty());
    assertTrue(!Files.exists(root), "a check writes nothing");

    s.prepare();
    Ed25519.KeyPair key = s.loadOrCreateKey(s.ticketKeyFile());
    String token = s.loadOrCreateCredential(cred);
    assertArrayEquals(key.publicKey().encoded(),
        StateDirectory.existingKey(s.ticketKeyFile()).orElseThrow().publicKey().encoded());
    assertEquals(token, StateDirectory.existingCredential(cred).orElseThrow());

    Files.setPosixFilePermissions(cred, PosixFilePermissions.fromString("rw-r-----"));
    ConfigException e = assertThrows(ConfigException.class,
        () -> StateDirectory.existingCredential(cred));
    assertTrue(e.getMessage().contains("0600"), e.getMessage());
    Files.writeString(s.ticketKeyFile(), "not a key\n");
    e = assertThrows(ConfigException.class, () -> StateDirectory.existingKey(s.ticketKeyFile()));
    assertTrue(e.getMessage().contains("not an ed25519-seed-v1 key file"), e.getMessage());
  }
}
