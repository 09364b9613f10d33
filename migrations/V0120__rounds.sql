-- Vintages and prospective rounds (docs/rounds.md).
-- raw.vintages: one row per ingest (its quarters and how its rows relate to the earlier
-- ingests'); raw.fundq_vintages: every distinct raw.fundq row with the ingest that first
-- reported it, so what each vintage said stays, restatements included.
CREATE TABLE raw.vintages (
    ingest_id     INTEGER PRIMARY KEY,
    first_q       INTEGER,
    last_q        INTEGER,
    rows_new      BIGINT NOT NULL,
    rows_restated BIGINT NOT NULL,
    rows_dropped  BIGINT NOT NULL
);
CREATE TABLE raw.fundq_vintages AS
SELECT CAST(NULL AS INTEGER) AS ingest_id, CAST(NULL AS UBIGINT) AS row_hash, *
FROM raw.fundq LIMIT 0;

CREATE SCHEMA IF NOT EXISTS rounds;
CREATE SEQUENCE rounds.round_id_seq START 1;
-- A round: origins frozen at origin_q (the data's last quarter at the open), horizons
-- 1..20, parameters known at the open, a deadline (server time, UTC).
CREATE TABLE rounds.rounds (
    round_id   INTEGER PRIMARY KEY DEFAULT nextval('rounds.round_id_seq'),
    name       VARCHAR NOT NULL UNIQUE,
    origin_q   INTEGER NOT NULL,
    deadline   TIMESTAMP NOT NULL,
    opened_at  TIMESTAMP NOT NULL,
    build_id   INTEGER,
    ingest_id  INTEGER,
    rules      VARCHAR NOT NULL,
    n_origins  INTEGER NOT NULL,
    n_cells    BIGINT NOT NULL,
    inputs     JSON
);
-- the round's origins (gvkeys: firm_id is not stable across ingests) with the deflator
-- and industry at the open
CREATE TABLE rounds.origins (
    round_id INTEGER NOT NULL,
    gvkey    VARCHAR NOT NULL,
    z        DOUBLE NOT NULL,
    ff48     SMALLINT,
    PRIMARY KEY (round_id, gvkey)
);
-- the standardization frozen at the open: k and the origin quarter's (mu, sigma divisor)
CREATE TABLE rounds.params (
    round_id INTEGER NOT NULL,
    item_id  SMALLINT NOT NULL,
    k        DOUBLE NOT NULL,
    mu       DOUBLE NOT NULL,
    sigma    DOUBLE NOT NULL,
    PRIMARY KEY (round_id, item_id)
);
-- x_t of every item present at the origin (FLOAT, as panel.truth_cells stores it); a
-- cell of the round is (gvkey, item_id) here times horizons 1..20
CREATE TABLE rounds.baselines (
    round_id INTEGER NOT NULL,
    gvkey    VARCHAR NOT NULL,
    item_id  SMALLINT NOT NULL,
    baseline FLOAT NOT NULL,
    PRIMARY KEY (round_id, gvkey, item_id)
);
CREATE SEQUENCE rounds.submission_id_seq START 1;
CREATE TABLE rounds.submissions (
    submission_id INTEGER PRIMARY KEY DEFAULT nextval('rounds.submission_id_seq'),
    round_id      INTEGER NOT NULL,
    name          VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,
    family        VARCHAR NOT NULL,
    sha256        VARCHAR NOT NULL,
    rows          BIGINT NOT NULL,
    received_at   TIMESTAMP NOT NULL,
    metadata      JSON,
    UNIQUE (round_id, name)
);
CREATE TABLE rounds.forecasts (
    submission_id INTEGER NOT NULL,
    gvkey         VARCHAR NOT NULL,
    item_id       SMALLINT NOT NULL,
    horizon       TINYINT NOT NULL,
    mu            DOUBLE,
    sigma         DOUBLE,
    PRIMARY KEY (submission_id, gvkey, item_id, horizon)
);
-- the first value reported after the origin, standardized with the round's parameters;
-- written once per cell, when it first resolves, never changed
CREATE TABLE rounds.truth (
    round_id    INTEGER NOT NULL,
    gvkey       VARCHAR NOT NULL,
    item_id     SMALLINT NOT NULL,
    horizon     TINYINT NOT NULL,
    actual      FLOAT NOT NULL,
    baseline    FLOAT NOT NULL,
    ingest_id   INTEGER,
    resolution_id INTEGER NOT NULL,
    PRIMARY KEY (round_id, gvkey, item_id, horizon)
);
CREATE SEQUENCE rounds.resolution_id_seq START 1;
CREATE TABLE rounds.resolutions (
    resolution_id INTEGER PRIMARY KEY DEFAULT nextval('rounds.resolution_id_seq'),
    ingest_id     INTEGER,
    build_id      INTEGER,
    last_q        INTEGER,
    panel_source  VARCHAR NOT NULL,
    cells_new     BIGINT NOT NULL,
    scores_new    BIGINT NOT NULL,
    resolved_at   TIMESTAMP NOT NULL,
    seconds       DOUBLE NOT NULL
);
-- per-cell scores of resolved cells (the terms of sql/eval's single and point scores)
CREATE TABLE rounds.cell_scores (
    submission_id INTEGER NOT NULL,
    gvkey         VARCHAR NOT NULL,
    item_id       SMALLINT NOT NULL,
    horizon       TINYINT NOT NULL,
    r             DOUBLE NOT NULL,
    nll           DOUBLE,
    crps          DOUBLE,
    z             DOUBLE,
    u             DOUBLE,
    PRIMARY KEY (submission_id, gvkey, item_id, horizon)
);
-- each round's metrics over the common sample of all its entries, as of the latest
-- resolution (sql/rounds/050; horizon NULL: all horizons): what the public snapshot carries
CREATE TABLE rounds.metrics (
    round_id      INTEGER NOT NULL,
    submission_id INTEGER NOT NULL,
    horizon       TINYINT,
    n             BIGINT NOT NULL,
    r2            DOUBLE,
    mse           DOUBLE,
    mae           DOUBLE,
    nll           DOUBLE,
    crps          DOUBLE,
    z2            DOUBLE,
    cov50         DOUBLE,
    cov80         DOUBLE,
    cov90         DOUBLE,
    cov95         DOUBLE,
    resolution_id INTEGER NOT NULL
);
