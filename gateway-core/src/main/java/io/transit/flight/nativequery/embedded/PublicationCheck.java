package io.transit.flight.nativequery.embedded;

import io.transit.flight.nativequery.Publication;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * The engine's own opening check, for {@code check-config}: opens every publication exactly as
 * {@link EmbeddedEngine#open} does (file identities, footers, declared columns against the file's
 * schema, CSV/Arrow conversion) over a scratch directory that is deleted afterwards, so a
 * configuration that passes here is one the engine opens. Touches no state directory.
 *
 * <p>Runs on the caller's thread; holds nothing after it returns.
 */
public final class PublicationCheck {
  private PublicationCheck() {}

  /**
   * @throws IllegalArgumentException a declaration does not match its file (names the
   *     publication, the column and the file)
   * @throws IOException a data file is missing or unreadable (names the file)
   * @throws SQLException DuckDB could not read a file
   */
  public static void check(List<Publication> publications, DuckSettings settings)
      throws IOException, SQLException {
    Path scratch = Files.createTempDirectory("transit-check-");
    try (BufferAllocator allocator = new RootAllocator(settings.memoryLimitBytes())) {
      // The temp directory setting is the operator's; the scratch directory only takes copies.
      DuckTables.open(publications, new DuckSettings(settings.memoryLimitBytes(),
          settings.threads(), scratch.resolve("tmp")), scratch, allocator).close();
    } finally {
      try (Stream<Path> files = Files.walk(scratch)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
