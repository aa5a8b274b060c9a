package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@link SegmentStore} contract on the reference store, a local directory. */
class LocalSegmentStoreContractTest extends SegmentStoreContract {
  @TempDir Path dir;
  private LocalSegmentStore local;

  @Override
  SegmentStore open() throws Exception {
    local = new LocalSegmentStore(dir.resolve("segments"));
    return local;
  }

  @Override
  void damage(byte[] sha256, byte[] bytes) throws Exception {
    Files.write(local.path(sha256), bytes);
  }

  /** A file that kept its size but not its bytes is not reused by the next write of them. */
  @Test
  void aDamagedFileOfTheRightSizeIsWrittenAgain() throws Exception {
    byte[] sha = store.write(Y);
    damage(sha, flipped(Y));
    assertArrayEquals(sha, store.write(Y));
    assertArrayEquals(Y, Files.readAllBytes(local.path(sha)));
  }

  /** A shutdown interrupting a reader is an answer the store could not give, not a lost file. */
  @Test
  void aReadInterruptedByAShutdownIsUnavailable() throws Exception {
    byte[] sha = store.write(Y);
    Thread.currentThread().interrupt();
    try {
      SegmentStore.Unavailable e = assertThrows(SegmentStore.Unavailable.class,
          () -> store.read(sha, Y.length, allocator));
      assertEquals("interrupted", e.reason);
    } finally {
      Thread.interrupted();
    }
    assertTrue(store.read(sha, Y.length, allocator).map(b -> {
      b.close();
      return true;
    }).orElse(false));
  }

  /**
   * A directory removed under the daemon is made again by the next sweep's listing and the next
   * write; a directory that cannot take a file is an answer the store could not give ({@code io}:
   * the query runs again), not a failed query, and writes succeed once it can again.
   */
  @Test
  void aRemovedDirectoryIsMadeAgainAndAFailedWriteIsUnavailable() throws Exception {
    Path segments = dir.resolve("segments");
    Files.delete(segments);
    assertEquals(0, store.stored().size());
    assertTrue(Files.isDirectory(segments));
    Files.delete(segments);
    byte[] sha = store.write(Y);
    assertArrayEquals(Y, Files.readAllBytes(local.path(sha)));

    Files.delete(local.path(sha));
    Files.delete(segments);
    Files.writeString(segments, "a file where the directory was");
    SegmentStore.Unavailable e =
        assertThrows(SegmentStore.Unavailable.class, () -> store.write(Y));
    assertEquals("io", e.reason);
    Files.delete(segments);
    Files.createDirectory(segments);
    assertArrayEquals(sha, store.write(Y));
  }
}
