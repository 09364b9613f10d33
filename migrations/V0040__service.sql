-- The benchmark service's own records (app/api): users, their API tokens (stored only as
-- salted HMAC-SHA256 digests), the persistent upload job queue, and the log of published
-- public snapshots. Written only by the API process (the one writer) and `proforma users`.
CREATE SCHEMA IF NOT EXISTS service;

CREATE SEQUENCE service.user_id_seq START 1;
CREATE TABLE service.users (
    user_id      INTEGER PRIMARY KEY DEFAULT nextval('service.user_id_seq'),
    name         VARCHAR NOT NULL UNIQUE CHECK (regexp_full_match(name, '[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')),
    is_admin     BOOLEAN NOT NULL DEFAULT false,
    -- uploads per UTC day; NULL means the server's default (PROFORMA_UPLOADS_PER_DAY)
    daily_limit  INTEGER CHECK (daily_limit >= 0),
    created_at   TIMESTAMP NOT NULL
);

-- A token is shown once as `pf_<token_id>.<secret>`; only hmac_sha256(salt, secret) is kept.
CREATE TABLE service.tokens (
    token_id     VARCHAR PRIMARY KEY CHECK (regexp_full_match(token_id, '[0-9a-f]{12}')),
    user_id      INTEGER NOT NULL,
    salt         VARCHAR NOT NULL,
    digest       VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP
);

-- One row per uploaded submission file, from upload to scored (or failed). Unfinished
-- rows (queued, validating, scoring) are resumed when the server starts again.
CREATE SEQUENCE service.job_id_seq START 1;
CREATE TABLE service.jobs (
    job_id        INTEGER PRIMARY KEY DEFAULT nextval('service.job_id_seq'),
    user_id       INTEGER NOT NULL,
    model_name    VARCHAR NOT NULL,
    family        VARCHAR NOT NULL,
    df            DOUBLE,
    metadata      JSON NOT NULL,
    upload_path   VARCHAR NOT NULL,
    upload_bytes  BIGINT NOT NULL,
    upload_sha256 VARCHAR NOT NULL,
    status        VARCHAR NOT NULL
                  CHECK (status IN ('queued', 'validating', 'scoring', 'done', 'failed')),
    message       VARCHAR,
    report        JSON,
    submission_id INTEGER,
    score_runs    JSON,
    attempts      INTEGER NOT NULL DEFAULT 0,
    created_at    TIMESTAMP NOT NULL,
    started_at    TIMESTAMP,
    finished_at   TIMESTAMP
);

-- Every publication of public.duckdb: when, from which score runs, how many rows.
CREATE SEQUENCE service.snapshot_id_seq START 1;
CREATE TABLE service.snapshots (
    snapshot_id   INTEGER PRIMARY KEY DEFAULT nextval('service.snapshot_id_seq'),
    path          VARCHAR NOT NULL,
    tables        JSON NOT NULL,
    published_at  TIMESTAMP NOT NULL,
    elapsed_ms    DOUBLE NOT NULL
);
