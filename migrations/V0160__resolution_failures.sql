-- A round resolution that failed as a whole (not one entry: rounds.entry_failures holds
-- those): when and why, so that /api/v1/health reports it until a resolution succeeds
-- and /metrics counts it (docs/operations.md, "Monitoring").
CREATE SEQUENCE rounds.resolution_failure_id_seq START 1;
CREATE TABLE rounds.resolution_failures (
    failure_id INTEGER PRIMARY KEY DEFAULT nextval('rounds.resolution_failure_id_seq'),
    failed_at  TIMESTAMP NOT NULL,
    error      VARCHAR NOT NULL,
    -- the latest resolution that had succeeded when this one failed (NULL: none); the
    -- failure stands while no resolution succeeded after it
    after_resolution_id INTEGER
);
