package io.transit.flight.nativequery.embedded;

import java.io.IOException;

/**
 * Whether a failure is the process (EMFILE) or the system (ENFILE) out of file descriptors: a
 * shortage that passes, never evidence about a segment or a query. Java reports no errno, only
 * the C library's text, which both errors begin with in the C locale (other locales translate it
 * and are not recognised: docs/limits.md, "Open files"). Stateless; any thread.
 */
final class OpenFiles {
  private static final String TEXT = "Too many open files";
  /** How far down a cause chain to look (DuckDB's errors come wrapped once or twice). */
  private static final int DEPTH = 8;

  private OpenFiles() {}

  static boolean exhausted(Throwable failure) {
    Throwable t = failure;
    for (int i = 0; t != null && i < DEPTH; i++, t = t.getCause()) {
      String message = t.getMessage();
      if (message != null && message.contains(TEXT)) {
        return true;
      }
    }
    return false;
  }

  /** {@code e}, or the store's {@link SegmentStore.Unavailable} when descriptors ran out. */
  static IOException unavailable(IOException e) {
    return e instanceof SegmentStore.Unavailable || !exhausted(e)
        ? e : new SegmentStore.Unavailable("open_files", e);
  }
}
