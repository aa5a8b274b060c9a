package io.transit.flight.nativequery.embedded;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The engine's state is created private to its owner (directories 0700, files 0600) rather than
 * with the process umask and tightened afterwards: the journal, the segments and the Parquet
 * copies hold query results and Table rows. The daemon's start-up check ({@code
 * StateDirectory.tighten}) then reports only modes someone loosened, not files the engine itself
 * just made.
 *
 * <p>Threads: stateless; any thread.
 */
final class PrivateFiles {
  private static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");
  private static final FileAttribute<Set<PosixFilePermission>> DIRECTORY =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));

  private PrivateFiles() {}

  /** {@code dir} and its missing parents, each created 0700; an existing directory is kept as is. */
  static Path directories(Path dir) throws IOException {
    return Files.createDirectories(dir, DIRECTORY);
  }

  /**
   * Creates {@code file} empty and 0600 when it does not exist, so that a library opening it next
   * (SQLite) keeps that mode, and gives its side files (the WAL and its index) the same.
   */
  static void file(Path file) throws IOException {
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(FILE));
    } catch (FileAlreadyExistsException existing) {
      // Opened as it is: a mode someone loosened is the start-up check's to report.
    }
  }

  /** Restricts a file another library created (DuckDB's {@code COPY ... TO}) to 0600. */
  static void restrict(Path file) throws IOException {
    Files.setPosixFilePermissions(file, FILE);
  }
}
