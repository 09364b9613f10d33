-- The public snapshot's lifecycle records (app/api/snapshot.py), from the publisher's
-- outcomes: which versioned file each publication installed, and every publication that
-- failed with its reason, so /api/v1/health can say the snapshot is stale and why.
ALTER TABLE service.snapshots ADD COLUMN file VARCHAR;

CREATE SEQUENCE service.snapshot_failure_id_seq START 1;
CREATE TABLE service.snapshot_failures (
    failure_id    INTEGER PRIMARY KEY DEFAULT nextval('service.snapshot_failure_id_seq'),
    failed_at     TIMESTAMP NOT NULL,
    error         VARCHAR NOT NULL
);
