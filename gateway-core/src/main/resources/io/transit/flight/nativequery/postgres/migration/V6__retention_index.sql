-- The retention sweep reads unreleased succeeded results oldest first and sums their bytes
-- (JournalStore.oldestRetained, retainedBytes): from this index alone, without sorting the table.
CREATE INDEX queries_retained ON queries (state, released, finished_ms, correlation, result_bytes);
