-- The history bound (engine.history_max_age_ms) also forgets the records of refused commands,
-- by when each refusal was decided: a refused command may name no upload to be forgotten with.

-- When a refusal was decided; none (NULL) in every other record, and in refusals recorded
-- before this migration or by a replica of an older version during a rolling upgrade, which
-- the bound therefore keeps. Nullable without a default: adding it rewrites no row.
ALTER TABLE commands ADD COLUMN refused_ms BIGINT;

-- The sweep reads refusals oldest first (JournalRows.FORGET_REFUSED). Partial, so an accepted
-- command adds no entry; building it reads the commands table once.
CREATE INDEX commands_refused ON commands (refused_ms) WHERE refused_ms IS NOT NULL;
