package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * The texts Linux gives Java for EMFILE and ENFILE, as Java and DuckDB wrap them, against other
 * failures of the same calls. The daemon's own case is end to end in {@code test_open_files.py}.
 */
class OpenFilesTest {
  @Test
  void theProcessOrTheSystemOutOfDescriptorsIsRecognisedThroughTheCauses() {
    IOException process = new FileSystemException("/state/engine/segments/ab", null,
        "Too many open files");
    IOException system = new FileSystemException("/data/t.parquet", null,
        "Too many open files in system");
    SQLException duck = new SQLException("IO Error: Cannot open file \"/data/t.parquet\": "
        + "Too many open files");
    assertTrue(OpenFiles.exhausted(process));
    assertTrue(OpenFiles.exhausted(system));
    assertTrue(OpenFiles.exhausted(new RuntimeException("wrapped", duck)));

    SegmentStore.Unavailable u =
        assertInstanceOf(SegmentStore.Unavailable.class, OpenFiles.unavailable(process));
    assertTrue(u.reason.equals("open_files") && u.getCause() == process);
    assertSame(u, OpenFiles.unavailable(u), "already the store's answer");
  }

  @Test
  void otherFailuresOfTheSameCallsAreLeftAsTheyAre() {
    IOException full = new FileSystemException("/state/engine/segments/ab", null,
        "No space left on device");
    IOException io = new IOException("Input/output error");
    assertFalse(OpenFiles.exhausted(full));
    assertFalse(OpenFiles.exhausted(io));
    assertFalse(OpenFiles.exhausted(new IOException((String) null)));
    assertSame(full, OpenFiles.unavailable(full));
    assertSame(io, OpenFiles.unavailable(io));
  }
}
