package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalSegmentStoreSyncTest {
  private static final byte[] X = "segment x".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] Y = "segment y".getBytes(StandardCharsets.US_ASCII);

  @Test
  void theDirectoryIsSyncedOnlyWhenARenameMayNotBeDurable(@TempDir Path dir) throws Exception {
    LocalSegmentStore store = new LocalSegmentStore(dir);
    byte[] sha = store.write(X);
    store.sync();
    assertEquals(1, store.directorySyncs());
    store.sync();
    assertEquals(1, store.directorySyncs(), "nothing was renamed since the last sync");
    assertArrayEquals(sha, store.write(X)); // already stored: no rename
    store.sync();
    assertEquals(1, store.directorySyncs());
    store.write(Y);
    store.sync();
    assertEquals(2, store.directorySyncs());
    assertArrayEquals(X, store.read(sha, X.length).orElseThrow());
  }

  @Test
  void filesFoundAtOpenAreSyncedOnceBeforeUse(@TempDir Path dir) throws Exception {
    new LocalSegmentStore(dir).write(X); // an earlier process that stopped before its sync
    LocalSegmentStore reopened = new LocalSegmentStore(dir);
    reopened.write(X);
    reopened.sync();
    assertEquals(1, reopened.directorySyncs());
    reopened.write(X);
    reopened.sync();
    assertEquals(1, reopened.directorySyncs());
  }

  /**
   * A writer killed between its temporary's creation and its rename leaves the file: the sweep's
   * listing removes it once it is older than any write takes, and leaves a young one (a writer
   * in progress) and every segment.
   */
  @Test
  void aTemporaryLeftByAKilledWriterIsRemovedByTheListingOnceOld(@TempDir Path dir)
      throws Exception {
    LocalSegmentStore store = new LocalSegmentStore(dir);
    byte[] sha = store.write(X);
    Path abandoned = Files.createTempFile(dir, "segment-", ".tmp");
    Files.write(abandoned, Y);
    Files.setLastModifiedTime(abandoned, FileTime.fromMillis(System.currentTimeMillis()
        - LocalSegmentStore.ABANDONED_TEMPORARY.toMillis() - 60_000));
    Path writing = Files.createTempFile(dir, "segment-", ".tmp");
    assertEquals(1, store.stored().size());
    assertArrayEquals(sha, store.stored().get(0));
    assertFalse(Files.exists(abandoned));
    assertTrue(Files.exists(writing));
  }
}
