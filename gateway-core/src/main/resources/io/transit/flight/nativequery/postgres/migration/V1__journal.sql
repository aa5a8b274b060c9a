-- The shared journal: the same tables as the embedded SQLite journal, in PostgreSQL types.
-- Unsigned 64-bit ids are stored as their signed bit patterns (BIGINT).

-- One row per principal: admission locks it (SELECT ... FOR UPDATE), so one principal's
-- commands are decided one at a time across every replica.
CREATE TABLE principals (
  principal BIGINT PRIMARY KEY,
  next_sequence BIGINT NOT NULL
);

-- The backstop of the row lock: a sequence is recorded at most once per principal.
CREATE TABLE commands (
  principal BIGINT NOT NULL,
  sequence BIGINT NOT NULL,
  command_sha256 BYTEA NOT NULL,
  outcome BYTEA NOT NULL,
  CONSTRAINT commands_principal_sequence UNIQUE (principal, sequence)
);

CREATE TABLE uploads (
  principal BIGINT NOT NULL,
  namespace BIGINT NOT NULL,
  declared_bytes BIGINT NOT NULL,
  part_count INTEGER NOT NULL,
  bundle_sha256 BYTEA NOT NULL,
  received_parts INTEGER NOT NULL,
  received_bytes BIGINT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (principal, namespace)
);

CREATE TABLE upload_parts (
  principal BIGINT NOT NULL,
  namespace BIGINT NOT NULL,
  part_index INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (principal, namespace, part_index)
);

-- Correlations for every replica: a sequence never hands a value out twice, even to
-- concurrent transactions, and holds no lock until commit (the SQLite journal's counter row
-- would serialize every principal's submits on one row).
CREATE SEQUENCE correlations AS BIGINT START WITH 1 NO CYCLE;

CREATE TABLE queries (
  correlation BIGINT PRIMARY KEY,
  principal BIGINT NOT NULL,
  namespace BIGINT NOT NULL,
  bundle_sha256 BYTEA NOT NULL,
  state TEXT NOT NULL,
  -- TEXT, not bounded VARCHARs: the engine bounds these, and the journal must never refuse a
  -- terminal status the embedded journal would keep.
  code TEXT NOT NULL,
  stage TEXT NOT NULL,
  message TEXT NOT NULL,
  manifest_sha256 BYTEA,
  total_rows BIGINT NOT NULL,
  limit_amount BIGINT NOT NULL,
  required_amount BIGINT NOT NULL,
  failed_column TEXT NOT NULL,
  released BOOLEAN NOT NULL,
  manifest BYTEA,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  result_bytes BIGINT NOT NULL DEFAULT 0
);

-- The retention policy's and the resume-at-open scans.
CREATE INDEX queries_state ON queries (state, released, finished_ms, correlation);
