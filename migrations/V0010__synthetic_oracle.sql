-- The synthetic source's oracle (app/sources/synthetic): futures simulated from the true
-- latent state at sampled test origins. Written by `proforma ingest synthetic` in the same
-- transaction as raw.fundq (the tables are replaced on each synthetic ingest).

-- The parameters of the synthetic ingest that produced the oracle tables (one row); the
-- oracle is used only when they equal the latest raw.ingests row's parameters.
CREATE TABLE raw.oracle_meta (
    parameters VARCHAR
);

-- One row per sampled origin: the firm, the origin quarter ordinal, the simulation size,
-- and a few of the true latent states at the origin (log annual revenue trend s, trend
-- growth g, gross margin gm, SG&A ratio sga, transitory revenue shock e_rev, macro m).
CREATE TABLE raw.oracle_origins (
    origin_id  INTEGER NOT NULL,
    gvkey      VARCHAR NOT NULL,
    origin_q   INTEGER NOT NULL,
    paths      SMALLINT,
    horizons   TINYINT,
    s          DOUBLE,
    g          DOUBLE,
    gm         DOUBLE,
    sga        DOUBLE,
    e_rev      DOUBLE,
    m          DOUBLE
);

-- Simulated values in dollars (millions), quarterly flows (not YTD), all 78 items
-- (item_id as ref.items). horizon 0 holds the origin's true values (path 0 only);
-- horizons 1..H hold paths 0..M-1.
CREATE TABLE raw.oracle_paths (
    origin_id  INTEGER NOT NULL,
    item_id    SMALLINT NOT NULL,
    horizon    TINYINT NOT NULL,
    path       SMALLINT NOT NULL,
    v          DOUBLE NOT NULL
);
