-- The deployment's rights (JournalStore.publishRights, docs/deployment.md "Shared rights"):
-- every recorded version, and one head row naming the current one. A decision reads the head by
-- key; a publish locks it (SELECT ... FOR UPDATE), so replicas reloading together record each
-- distinct document once. Epoch 0 with an empty digest: nothing recorded yet.
CREATE TABLE rights_versions (
  epoch BIGINT PRIMARY KEY,
  content_sha256 BYTEA NOT NULL,
  document BYTEA NOT NULL
);

CREATE TABLE rights_head (
  id INTEGER PRIMARY KEY,
  epoch BIGINT NOT NULL,
  content_sha256 BYTEA NOT NULL
);
INSERT INTO rights_head (id, epoch, content_sha256) VALUES (1, 0, ''::bytea);
