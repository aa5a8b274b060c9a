package io.transit.flight.server.cli;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Optional;

/**
 * The daemon's application class-data-sharing archive (AppCDS, a JDK 17 dynamic archive): the
 * classes a daemon loaded, parsed and verified once, mapped by every later start instead of read
 * from the jars again.
 *
 * <p>The archive lives in a directory the launcher names ({@code transit.cds.dir}: the
 * distribution's {@code cds/}, or {@code gateway-server/target/cds/} for {@code scripts/gateway})
 * under a name that hashes the JVM version and every class-path entry's path, size and
 * modification time, so a rebuilt jar or another runtime never maps a stale archive (the JVM
 * would refuse it anyway; the name just makes a fresh one be dumped). When there is none, the
 * first daemon to claim it ({@code .claim}, created atomically) runs with {@code
 * -XX:ArchiveClassesAtExit} and the JVM writes the archive when that daemon exits; concurrent
 * starts meanwhile run without one. The daemon marks its claim once it serves ({@link
 * #markServing}); an archive whose claim is unmarked was written by a daemon that exited before
 * serving, with hardly any of the gateway's classes in it, and the next start dumps it again
 * instead of mapping it. A claim older than {@link #STALE_CLAIM} without an archive (a daemon
 * killed before it could exit) is taken over. Claiming removes other builds' archives. {@code
 * -Xshare:auto} (the default) makes the JVM ignore an archive it cannot map, so a damaged file
 * costs only the speed-up.
 *
 * <p>{@link #options} runs in the launcher's short JVM ({@link JvmOptions}), on its main thread;
 * {@link #markServing} in the daemon's JVM, on its main thread.
 */
final class CdsArchive {
  static final Duration STALE_CLAIM = Duration.ofHours(1);
  /** The system property naming a dumping daemon's claim, for {@link #markServing}. */
  static final String CLAIM = "transit.cds.claim";
  private static final String SERVING = "serving\n";
  /** The JVM's CDS warnings (a class it will not archive, a refused archive) are not the log's. */
  private static final String QUIET = "-Xlog:cds=off\n-Xlog:cds+dynamic=off";

  private CdsArchive() {}

  /** As {@link #options(Path, String, String, Instant, boolean)}, for a daemon that may dump. */
  static Optional<String> options(Path dir, String classPath, String jvmVersion, Instant now) {
    return options(dir, classPath, jvmVersion, now, true);
  }

  /**
   * The JVM options for a daemon start, one a line, or empty when {@code dir} cannot hold an
   * archive.
   *
   * @param mayDump false for a daemon that loads a native agent (a profiler): the JVM refuses to
   *     dump an archive then and fails to start, so such a daemon only maps an existing one
   */
  static Optional<String> options(Path dir, String classPath, String jvmVersion, Instant now,
      boolean mayDump) {
    try {
      Files.createDirectories(dir);
      if (!Files.isWritable(dir)) {
        return Optional.empty();
      }
      Path archive = dir.resolve("transit-" + key(classPath, jvmVersion) + ".jsa");
      Path claim = dir.resolve(archive.getFileName() + ".claim");
      if (Files.isRegularFile(archive) && Files.size(archive) > 0) {
        if (served(claim)) {
          return Optional.of("-XX:SharedArchiveFile=" + archive + "\n" + QUIET);
        }
        // Its dumper exited before it served (a bad option, a refused configuration): the
        // archive holds little beyond the command line's classes, so it is dumped again.
        if (!mayDump || !discarded(archive, now)) {
          return Optional.empty();
        }
        Files.write(claim, new byte[0]); // ours: this start's move took the archive
      } else if (!mayDump || !claimed(claim, now)) {
        return Optional.empty();
      }
      prune(dir, archive, claim);
      return Optional.of("-XX:ArchiveClassesAtExit=" + archive + "\n" + QUIET + "\n-D" + CLAIM
          + "=" + claim);
    } catch (IOException | RuntimeException e) {
      return Optional.empty(); // no archive: the daemon starts as it always did
    }
  }

  /**
   * Removes the archives (and claims) of other builds: each rebuild names a new one, and ~40 MB
   * apiece would pile up. A daemon still mapping a removed file keeps its mapping.
   */
  private static void prune(Path dir, Path keep, Path keepClaim) {
    try (var files = Files.newDirectoryStream(dir, "transit-*.jsa*")) {
      for (Path f : files) {
        if (!f.equals(keep) && !f.equals(keepClaim)) {
          Files.deleteIfExists(f);
        }
      }
    } catch (IOException | RuntimeException e) {
      // Only disk space is at stake: the next claim tries again.
    }
  }

  private static boolean claimed(Path claim, Instant now) throws IOException {
    try {
      Files.createFile(claim);
      return true;
    } catch (FileAlreadyExistsException e) {
      FileTime at = Files.getLastModifiedTime(claim);
      if (Duration.between(at.toInstant(), now).compareTo(STALE_CLAIM) > 0) {
        Files.write(claim, new byte[0]); // the new claimant marks it again once it serves
        return true;
      }
      return false;
    }
  }

  /**
   * Moves an archive that no serving daemon dumped out of the way; true for the one start whose
   * move succeeded (concurrent starts see it gone and run without an archive). The moved file
   * is removed by {@link #prune}.
   */
  private static boolean discarded(Path archive, Instant now) {
    try {
      String aside = archive.getFileName() + ".discarded-" + now.toEpochMilli() + "-"
          + ProcessHandle.current().pid();
      Files.move(archive, archive.resolveSibling(aside), StandardCopyOption.ATOMIC_MOVE);
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static boolean served(Path claim) throws IOException {
    return Files.isRegularFile(claim)
        && SERVING.equals(Files.readString(claim, StandardCharsets.UTF_8));
  }

  /**
   * Marks this daemon's claim once it serves, so that the archive the JVM writes at its exit is
   * mapped by later starts; a daemon that exits before (a bad option, a refused configuration)
   * leaves the claim unmarked and its archive is dumped again. Does nothing for a daemon that
   * does not dump ({@code claim} null or empty). Called by the daemon's main thread.
   */
  static void markServing(String claim) {
    if (claim == null || claim.isEmpty()) {
      return;
    }
    try {
      Files.writeString(Path.of(claim), SERVING, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      // Only the speed-up is at stake: the next start dumps the archive again.
    }
  }

  /** SHA-256 (first 16 hex digits) of the JVM version and each class-path entry's identity. */
  static String key(String classPath, String jvmVersion) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    md.update(jvmVersion.getBytes(StandardCharsets.UTF_8));
    for (String entry : classPath.split(File.pathSeparator)) {
      Path p = Path.of(entry).toAbsolutePath();
      String id = p + "\0" + (Files.exists(p)
          ? Files.size(p) + "\0" + Files.getLastModifiedTime(p).toMillis() : "-") + "\n";
      md.update(id.getBytes(StandardCharsets.UTF_8));
    }
    return HexFormat.of().formatHex(md.digest(), 0, 8);
  }
}
