-- Execution leases (docs/native-engine.md, "Execution leases"): which replica runs an accepted
-- query, until when, and the attempt number that fences every other replica's finish.
ALTER TABLE queries
  ADD COLUMN lease_owner BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '',
  ADD COLUMN lease_until_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN attempt BIGINT NOT NULL DEFAULT 0;

-- The takeover scan: accepted queries whose lease lapsed, oldest first.
CREATE INDEX queries_lease ON queries (state, lease_until_ms, correlation);
