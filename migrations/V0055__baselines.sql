-- The competitor suite's records (docs/baselines.md). meta.imputations: one row per factor
-- imputation of the tabular view (app/imputed.py writes panel.tabular_imputed, the
-- imputed features every tabular competitor reads). meta.baseline_runs: one row per
-- competitor fit by `proforma run baselines` (configuration, registry run, fit time,
-- the submission its forecasts became).
CREATE SCHEMA IF NOT EXISTS meta;

CREATE SEQUENCE meta.imputation_id_seq START 1;
CREATE TABLE meta.imputations (
    imputation_id  INTEGER PRIMARY KEY DEFAULT nextval('meta.imputation_id_seq'),
    build_id       INTEGER,              -- the meta.builds row the tabular view came from
    config         JSON NOT NULL,        -- n_factors, n_iter, tol, ridge, min_pairs
    rows           BIGINT NOT NULL,
    quarters       INTEGER NOT NULL,
    cells_filled   BIGINT NOT NULL,      -- feature cells that were missing and got a value
    elapsed_s      DOUBLE NOT NULL,
    created_at     TIMESTAMP NOT NULL
);

CREATE SEQUENCE meta.baseline_run_id_seq START 1;
CREATE TABLE meta.baseline_runs (
    baseline_run_id INTEGER PRIMARY KEY DEFAULT nextval('meta.baseline_run_id_seq'),
    model          VARCHAR NOT NULL,     -- enet | rf | ffnn-linear | ffnn-large | gbm-l1 | gbm-l2
    preset         VARCHAR NOT NULL,     -- paper | demo
    build_id       INTEGER,
    imputation_id  INTEGER,
    registry_run   VARCHAR NOT NULL,     -- the on-disk run folder (models_dir/baselines/...)
    config         JSON NOT NULL,
    info           JSON,                 -- selected grid points, trees, seeds
    fit_s          DOUBLE NOT NULL,
    submission_id  INTEGER,              -- eval.submissions row of its forecasts
    created_at     TIMESTAMP NOT NULL
);
