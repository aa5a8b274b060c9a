-- Small results' segments (ResultWriter.INLINE_RESULT_BYTES): written with the manifest and the
-- terminal status in one commit, deleted by the release (docs/admission.md §10).
CREATE TABLE inline_segments (
  correlation BIGINT NOT NULL,
  segment_index INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (correlation, segment_index)
);

-- flush(): a durable commit needs a row to write.
CREATE TABLE flushes (
  id INTEGER PRIMARY KEY,
  count BIGINT NOT NULL
);
INSERT INTO flushes (id, count) VALUES (1, 0);
