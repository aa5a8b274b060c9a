package io.transit.flight.nativequery.embedded;

import java.nio.file.Files;
import java.nio.file.Path;
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
}
