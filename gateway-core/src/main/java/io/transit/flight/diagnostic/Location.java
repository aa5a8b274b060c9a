package io.transit.flight.diagnostic;

/**
 * Where a fact points: an optional source path (e.g. {@code statement} or a column path) plus
 * optional numeric coordinates, each non-negative (0 included, as the schema allows); offset and
 * length count UTF-8 bytes of the source. Shortening a diagnostic may cut or drop the path but
 * never the numbers.
 */
public record Location(String path, Integer line, Integer column, Integer offset, Integer length) {
  public Location {
    checkNonNegative("line", line);
    checkNonNegative("column", column);
    checkNonNegative("offset", offset);
    checkNonNegative("length", length);
    path = path == null ? null : Utf8Text.wellFormed(path);
  }

  /** A position in the statement text (path {@code statement}). */
  public static Location inStatement(int line, int column, int offset, int length) {
    return new Location("statement", line, column, offset, length);
  }

  public static Location path(String path) {
    return new Location(path, null, null, null, null);
  }

  private static void checkNonNegative(String name, Integer value) {
    if (value != null && value < 0) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: >= 0)");
    }
  }
}
