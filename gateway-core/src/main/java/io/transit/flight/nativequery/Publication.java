package io.transit.flight.nativequery;

import io.transit.flight.proto.TableDeclaration;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A published Table as the native system serves it: its declaration (identity and logical row
 * descriptor) and the immutable data files it is loaded from.
 *
 * @param declaration the declaration requests must carry unchanged
 * @param files the data files, read in order
 * @param format {@code parquet}, {@code csv} (with a header row) or {@code arrow} (Arrow IPC file)
 */
public record Publication(TableDeclaration declaration, List<Path> files, String format) {
  public static final List<String> FORMATS = List.of("parquet", "csv", "arrow");

  public Publication {
    Objects.requireNonNull(declaration, "declaration");
    files = List.copyOf(files);
    if (files.isEmpty()) {
      throw new IllegalArgumentException(
          "publication " + declaration.getTable() + ": no files (expected: at least one)");
    }
    if (!FORMATS.contains(format)) {
      throw new IllegalArgumentException(
          "publication " + declaration.getTable() + ": format " + format + " (expected: one of "
              + FORMATS + ")");
    }
  }

  /** The same data published under another declaration (e.g. the server's catalog and ids). */
  public Publication withDeclaration(TableDeclaration other) {
    return new Publication(other, files, format);
  }
}
