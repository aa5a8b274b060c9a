package io.transit.flight.server.cli;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The launcher's class-data-sharing options: dump once, then map; never a stale archive. */
class CdsArchiveTest {
  @TempDir Path dir;

  @Test
  void theFirstDaemonDumpsConcurrentOnesRunWithoutAndLaterOnesMap() throws Exception {
    Path jar = Files.writeString(dir.resolve("a.jar"), "classes");
    String cp = jar.toString();
    Path cds = dir.resolve("cds");
    Instant now = Instant.now();
    String first = CdsArchive.options(cds, cp, "17.0.15", now).orElseThrow();
    assertTrue(first.startsWith("-XX:ArchiveClassesAtExit=" + cds + File.separator + "transit-"),
        first);
    assertTrue(CdsArchive.options(cds, cp, "17.0.15", now).isEmpty(),
        "claimed by the first daemon, which has not exited yet");
    Path archive = dumpedBy(first);
    assertTrue(first.endsWith("\n-D" + CdsArchive.CLAIM + "=" + archive + ".claim"), first);
    CdsArchive.markServing(claimOf(first));
    Files.write(archive, new byte[] {1});
    assertEquals("-XX:SharedArchiveFile=" + archive + "\n-Xlog:cds=off\n-Xlog:cds+dynamic=off",
        CdsArchive.options(cds, cp, "17.0.15", now).orElseThrow());
  }

  @Test
  void anArchiveWhoseDaemonExitedBeforeServingIsDumpedAgain() throws Exception {
    String cp = Files.writeString(dir.resolve("a.jar"), "classes").toString();
    Path cds = dir.resolve("cds");
    Instant now = Instant.now();
    String refused = CdsArchive.options(cds, cp, "17", now).orElseThrow();
    Path archive = dumpedBy(refused);
    Files.write(archive, new byte[] {1}); // what its JVM wrote at exit 64, never marked
    String again = CdsArchive.options(cds, cp, "17", now).orElseThrow();
    assertEquals(refused, again, "the next start claims it again");
    assertFalse(Files.exists(archive), "the unserved archive is not mapped by anyone");
    try (var left = Files.list(cds)) {
      assertEquals(1, left.count(), "only the claim is left");
    }
    assertTrue(CdsArchive.options(cds, cp, "17", now).isEmpty(), "claimed by the second start");
    assertTrue(CdsArchive.options(cds, cp, "17", now, false).isEmpty());
    CdsArchive.markServing(claimOf(again));
    Files.write(archive, new byte[] {2});
    assertTrue(CdsArchive.options(cds, cp, "17", now).orElseThrow()
        .startsWith("-XX:SharedArchiveFile=" + archive));
  }

  @Test
  void aDaemonThatDoesNotDumpMarksNothing() throws Exception {
    assertDoesNotThrow(() -> CdsArchive.markServing(null));
    assertDoesNotThrow(() -> CdsArchive.markServing(""));
    // A claim that cannot be written costs only the speed-up: no failure, nothing created.
    assertDoesNotThrow(() -> CdsArchive.markServing(
        dir.resolve("no-such-dir").resolve("x.claim").toString()));
    try (var left = Files.list(dir)) {
      assertEquals(0, left.count(), "nothing was written anywhere");
    }
  }

  private static Path dumpedBy(String options) {
    return Path.of(options.split("\n")[0].substring("-XX:ArchiveClassesAtExit=".length()));
  }

  private static String claimOf(String options) {
    String flag = "-D" + CdsArchive.CLAIM + "=";
    return options.substring(options.indexOf(flag) + flag.length());
  }

  @Test
  void aClaimWithoutAnArchiveIsTakenOverOnceStale() throws Exception {
    String cp = Files.writeString(dir.resolve("a.jar"), "classes").toString();
    Path cds = dir.resolve("cds");
    Instant now = Instant.now();
    assertTrue(CdsArchive.options(cds, cp, "17", now).isPresent());
    assertTrue(CdsArchive.options(cds, cp, "17", now.plus(Duration.ofMinutes(5))).isEmpty());
    assertTrue(CdsArchive.options(cds, cp, "17",
        now.plus(CdsArchive.STALE_CLAIM).plusSeconds(1)).orElseThrow()
        .startsWith("-XX:ArchiveClassesAtExit="), "the claimant was killed before it exited");
  }

  @Test
  void anotherJarOrRuntimeNamesAnotherArchive() throws Exception {
    Path jar = Files.writeString(dir.resolve("a.jar"), "classes");
    String before = CdsArchive.key(jar.toString(), "17.0.15");
    assertEquals(before, CdsArchive.key(jar.toString(), "17.0.15"));
    assertNotEquals(before, CdsArchive.key(jar.toString(), "17.0.16"));
    Files.setLastModifiedTime(jar, FileTime.from(Instant.now().plusSeconds(60)));
    assertNotEquals(before, CdsArchive.key(jar.toString(), "17.0.15"), "a rebuilt jar");
    Files.writeString(dir.resolve("b.jar"), "more");
    assertNotEquals(before,
        CdsArchive.key(jar + File.pathSeparator + dir.resolve("b.jar"), "17.0.15"));
  }

  @Test
  void claimingRemovesOtherBuildsArchives() throws Exception {
    Path cds = Files.createDirectories(dir.resolve("cds"));
    Path old = Files.write(cds.resolve("transit-0000000000000000.jsa"), new byte[] {1});
    Path oldClaim = Files.createFile(cds.resolve("transit-0000000000000000.jsa.claim"));
    Path unrelated = Files.writeString(cds.resolve("notes.txt"), "kept");
    String cp = Files.writeString(dir.resolve("a.jar"), "classes").toString();
    assertTrue(CdsArchive.options(cds, cp, "17", Instant.now()).orElseThrow()
        .startsWith("-XX:ArchiveClassesAtExit="));
    assertFalse(Files.exists(old));
    assertFalse(Files.exists(oldClaim));
    assertTrue(Files.exists(unrelated));
  }

  @Test
  void aDaemonWithANativeAgentMapsButNeverDumps() throws Exception {
    String cp = Files.writeString(dir.resolve("a.jar"), "classes").toString();
    Path cds = dir.resolve("cds");
    Instant now = Instant.now();
    assertTrue(CdsArchive.options(cds, cp, "17", now, false).isEmpty(), "no archive, no claim");
    String first = CdsArchive.options(cds, cp, "17", now).orElseThrow();
    assertTrue(first.startsWith("-XX:ArchiveClassesAtExit="), "the claim was left for a dumper");
    Path archive = dumpedBy(first);
    CdsArchive.markServing(claimOf(first));
    Files.write(archive, new byte[] {1});
    assertTrue(CdsArchive.options(cds, cp, "17", now, false).orElseThrow()
        .startsWith("-XX:SharedArchiveFile=" + archive));
    assertTrue(JvmOptions.loadsNativeAgent("-Xss1m -agentpath:/p/libasyncProfiler.so=start"));
    assertTrue(JvmOptions.loadsNativeAgent("-agentlib:jdwp=transport=dt_socket"));
    assertFalse(JvmOptions.loadsNativeAgent("-Xss1m"));
    assertFalse(JvmOptions.loadsNativeAgent(null));
  }

  @Test
  void anUnwritableDirectoryMeansNoArchive() throws Exception {
    Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
    assertTrue(CdsArchive.options(file.resolve("cds"), "a.jar", "17", Instant.now()).isEmpty());
  }
}
