package io.transit.flight.server.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * check-config's look at the state directory as its user ({@link StateAccess}). Run as root, the
 * cases another user meets are judged for a pretended user (ownership), and the ones only a
 * process of that user can meet (access(2)) are the end-to-end test's (test_ops_cli.py, which
 * runs check-config as nobody).
 */
class StateAccessTest {
  @TempDir Path dir;

  private ResolvedConfig config(Path stateDir) throws Exception {
    Path f = dir.resolve("gateway.json");
    Files.writeString(f, ConfigLoaderTest.VALID.formatted(ConfigLoaderTest.caller("a", 10))
        .replace("\"state_dir\": \"state\"", "\"state_dir\": \"" + stateDir + "\""));
    return new ConfigLoader().load(f);
  }

  private static List<Path> tree(Path root) throws Exception {
    try (Stream<Path> all = Files.walk(root)) {
      return all.sorted().toList();
    }
  }

  /** A user other than this process's and not root. */
  private static StateAccess.User other() {
    int me = StateAccess.User.current().uid();
    return new StateAccess.User(me == 65534 ? 65533 : 65534, "other");
  }

  @Test
  void aMissingStateDirectoryPassesAndIsNotCreated() throws Exception {
    Path state = dir.resolve("etc/state");
    StateAccess.check(config(state));
    assertFalse(Files.exists(dir.resolve("etc")), "a check creates nothing");
  }

  @Test
  void aStateDirectoryThatCannotBeMadeIsRefused() throws Exception {
    Files.writeString(dir.resolve("file"), "x");
    ConfigException e = assertThrows(ConfigException.class,
        () -> StateAccess.check(config(dir.resolve("file/state"))));
    assertEquals("state_dir " + dir.resolve("file/state") + ": " + dir.resolve("file")
        + " is not a directory", e.getMessage());
    e = assertThrows(ConfigException.class, () -> StateAccess.check(config(dir.resolve("file"))));
    assertEquals("state_dir " + dir.resolve("file") + ": not a directory", e.getMessage());
  }

  @Test
  void aStartedStateDirectoryPassesForItsOwnerAndCreatesNothing() throws Exception {
    Path root = dir.resolve("state");
    StateDirectory s = new StateDirectory(root, new SecureRandom());
    s.prepare();
    s.loadOrCreateKey(s.ticketKeyFile());
    Files.writeString(s.engineDir().resolve("journal.sqlite"), "j");
    // Loosened modes are the start's to restrict, which the owner may.
    Files.setPosixFilePermissions(s.engineDir(), PosixFilePermissions.fromString("rwxr-xr-x"));
    List<Path> before = tree(root);
    StateAccess.check(config(root));
    assertEquals(before, tree(root));
  }

  @Test
  void aModeOnlyTheOwnerCouldRestrictIsRefusedForAnotherUser() throws Exception {
    Path root = dir.resolve("state");
    StateDirectory s = new StateDirectory(root, new SecureRandom());
    s.prepare();
    Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
    ConfigException e = assertThrows(ConfigException.class,
        () -> StateAccess.check(config(root), other()));
    assertTrue(e.getMessage().startsWith("state_dir " + root + ": cannot restrict to rwx------"
        + " as other"), e.getMessage());

    Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
    Path segments = Files.createDirectories(s.engineDir().resolve("segments"));
    Files.setPosixFilePermissions(segments, PosixFilePermissions.fromString("rwx------"));
    Path segment = Files.writeString(segments.resolve("1.seg"), "s");
    Files.setPosixFilePermissions(segment, PosixFilePermissions.fromString("rw-r--r--"));
    e = assertThrows(ConfigException.class, () -> StateAccess.check(config(root), other()));
    assertTrue(e.getMessage().startsWith("state_dir " + segment + ": cannot restrict to rw-------"
        + " as other"), e.getMessage());
  }

  @Test
  void anUnreadableKeyIsRefusedNotTakenForAMissingOne() throws Exception {
    assumeTrue(StateAccess.User.current().uid() > 0,
        "root reads any file: test_ops_cli.py runs this case as nobody");
    Path root = dir.resolve("state");
    StateDirectory s = new StateDirectory(root, new SecureRandom());
    s.prepare();
    s.loadOrCreateKey(s.ticketKeyFile());
    Files.setPosixFilePermissions(s.ticketKeyFile(), PosixFilePermissions.fromString("-w-------"));
    ConfigException e = assertThrows(ConfigException.class,
        () -> StateAccess.check(config(root)));
    assertTrue(e.getMessage().startsWith(s.ticketKeyFile() + ": cannot read as "), e.getMessage());
    assertTrue(e.getMessage().contains("lacking read permission"), e.getMessage());
  }
}
