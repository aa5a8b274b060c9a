-- The journal's compatibility floor (JournalStore "Formats"): the oldest journal format a build
-- must implement to use this journal. The embedded journal keeps it in SQLite's header
-- (user_version); the shared one had no such table until now (its correlations come from a
-- sequence). A build reads the row at open and refuses a floor above its own format; builds from
-- before it never read it.
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('reader_format', 1);
