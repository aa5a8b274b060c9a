-- The history bound (engine.history_max_age_ms) also forgets uploads that never reached an
-- accepted submit, and a chain's records by the namespace they name.

-- The namespace each command named; records from before this migration name none (NULL).
ALTER TABLE commands ADD COLUMN namespace BIGINT;

-- When each upload was begun. The default is the insert's own time, so an upload from before
-- this migration counts as begun now (an upgrade does not make every earlier one older than the
-- bound at once), and so does one a replica of the previous version begins during a rolling
-- upgrade, which names no time of its own.
ALTER TABLE uploads ADD COLUMN begun_ms BIGINT NOT NULL
  DEFAULT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT;

-- The sweep reads unsubmitted uploads oldest first (JournalRows.ABANDONED_BEFORE).
CREATE INDEX uploads_begun ON uploads (begun_ms, principal, namespace);
