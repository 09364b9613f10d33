-- Incremental scoring and quantile submissions (docs/scoring.md). Per-cell scores are
-- stored once per submission and scoring context (build, scoring-SQL version, rule set):
-- eval.cell_scores with its record eval.cell_score_sets; each submission's coverage of a
-- footprint and the footprint cells it does not predict (eval.footprint_coverage,
-- eval.sample_gaps) make a run's common sample without reading the other submissions'
-- cells; score runs record their rule set and a fingerprint of their common sample, so
-- a later run on the same sample copies the results of submissions scored before.
-- eval.submissions is rebuilt because DuckDB cannot alter a CHECK constraint: family
-- gains 'quantile', and quantile_levels holds a quantile submission's grid.
CREATE TABLE eval.submissions_v65 (
    submission_id  INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,           -- upload | model | reference
    family         VARCHAR NOT NULL CHECK (family IN ('gaussian', 'laplace', 'student_t', 'quantile')),
    df             DOUBLE,                     -- Student-t degrees of freedom
    has_sigma      BOOLEAN NOT NULL,
    n_components   INTEGER NOT NULL,           -- 1 = single, K > 1 = mixture; quantile: the grid's size
    rows           BIGINT NOT NULL,
    cells          BIGINT NOT NULL,
    checksum       VARCHAR NOT NULL,           -- sha256 of the file or of the Arrow batches
    build_id       INTEGER,                    -- meta.builds row current at ingest (NULL if none)
    warnings       JSON,
    metadata       JSON,
    created_at     TIMESTAMP NOT NULL,
    retired_at     TIMESTAMP,                  -- set when a newer submission took its name
    quantile_levels DOUBLE[]                   -- family quantile: the levels, ascending; component k is level k + 1
);
INSERT INTO eval.submissions_v65 BY NAME SELECT * FROM eval.submissions;
DROP TABLE eval.submissions;
ALTER TABLE eval.submissions_v65 RENAME TO submissions;

-- One row per cell a submission predicts validly under the context's rules (point
-- finite; under the paper's rules also every given sigma finite and > 0) with finite
-- actual and baseline. cell = eval.cell_key(firm_id, origin_q, item_id, horizon).
CREATE TABLE eval.cell_scores (
    submission_id  INTEGER NOT NULL,
    cell           BIGINT NOT NULL,
    r              DOUBLE NOT NULL,            -- point - actual (squared track; quantiles: the grid's mean)
    r_abs          DOUBLE,                     -- quantiles only: median - actual (absolute track); NULL without level 0.5
    nll            DOUBLE,                     -- density terms: NULL without a usable density
    crps           DOUBLE,
    z              DOUBLE,                     -- r / sigma (mixtures: moment-matched sigma)
    u              DOUBLE,                     -- PIT: the forecast CDF at the actual
    in50           BOOLEAN,                    -- actual inside the central 50/80/90/95% interval
    in80           BOOLEAN,
    in90           BOOLEAN,
    in95           BOOLEAN
);

CREATE TABLE eval.cell_score_sets (
    submission_id     INTEGER PRIMARY KEY,
    build_id          INTEGER,
    eval_sql_version  VARCHAR NOT NULL,
    rules             VARCHAR NOT NULL,        -- published | paper
    cells             BIGINT NOT NULL,
    density_cells     BIGINT NOT NULL,
    computed_at       TIMESTAMP NOT NULL,
    elapsed_s         DOUBLE NOT NULL
);

-- A submission's coverage of a footprint under one scoring context; its gaps (the
-- footprint cells it does not predict) are kept when it predicts at least half of them.
CREATE TABLE eval.footprint_coverage (
    footprint_id      INTEGER NOT NULL,
    submission_id     INTEGER NOT NULL,
    build_id          INTEGER,
    eval_sql_version  VARCHAR NOT NULL,
    rules             VARCHAR NOT NULL,
    footprint_cells   BIGINT NOT NULL,
    predicted_cells   BIGINT NOT NULL,
    gaps_stored       BOOLEAN NOT NULL,
    computed_at       TIMESTAMP NOT NULL
);
CREATE TABLE eval.sample_gaps (
    footprint_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    cell           BIGINT NOT NULL
);

ALTER TABLE eval.score_runs ADD COLUMN rules VARCHAR;
ALTER TABLE eval.score_runs ADD COLUMN sample_fingerprint VARCHAR;
-- {submission_id: score_run_id} for submissions whose results were copied from an
-- earlier run on the same common sample.
ALTER TABLE eval.score_runs ADD COLUMN reused JSON;

-- Density means are over the cells with a usable density, counted here (under the
-- published rules a cell with an unusable sigma stays in the point sample only).
ALTER TABLE eval.metrics ADD COLUMN n_density BIGINT;

-- A quantile grid without level 0.5 has no absolute-track loss.
ALTER TABLE eval.quarter_losses ALTER COLUMN sum_abs DROP NOT NULL;

-- The integral of (ind - tau) g(tau) over tau in [u0, u1] for g linear from g0 to g1
-- (Simpson's rule, exact for this quadratic integrand): one piece of the pinball-loss
-- integral whose double is the CRPS of a quantile grid; g = quantile - actual, and ind
-- = 1{actual < quantile} is constant on the piece.
CREATE MACRO eval.qs_piece(u0, u1, g0, g1, ind) AS
    (u1 - u0) / 6 * ((CAST(ind AS DOUBLE) - u0) * g0
                     + 4 * (CAST(ind AS DOUBLE) - (u0 + u1) / 2) * (g0 + g1) / 2
                     + (CAST(ind AS DOUBLE) - u1) * g1);
