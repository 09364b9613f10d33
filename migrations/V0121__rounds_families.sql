-- Rounds take every family the static scorer takes (docs/rounds.md): Student-t (its df on
-- the submission), mixtures (several components per cell) and quantile grids (the grid on
-- the submission, component k holding the quantile at level k + 1).
ALTER TABLE rounds.submissions ADD COLUMN df DOUBLE;
ALTER TABLE rounds.submissions ADD COLUMN n_components SMALLINT DEFAULT 1;
ALTER TABLE rounds.submissions ADD COLUMN quantile_levels DOUBLE[];
-- the components of a round's mixture and quantile submissions (a single forecast stays
-- in rounds.forecasts); sigma is NULL for a quantile grid
CREATE TABLE rounds.forecast_components (
    submission_id INTEGER NOT NULL,
    gvkey         VARCHAR NOT NULL,
    item_id       SMALLINT NOT NULL,
    horizon       TINYINT NOT NULL,
    component     SMALLINT NOT NULL,
    mu            DOUBLE,
    sigma         DOUBLE,
    PRIMARY KEY (submission_id, gvkey, item_id, horizon, component)
);
-- the absolute-track residual (a quantile grid's median - actual, NULL without level 0.5;
-- r for every other family) and whether the actual lies in the central 50/80/90/95%
-- intervals (from u for densities, from the grid's level pair for quantiles), as the
-- static scorer's eval.cell_density_scores
ALTER TABLE rounds.cell_scores ADD COLUMN r_abs DOUBLE;
ALTER TABLE rounds.cell_scores ADD COLUMN in50 BOOLEAN;
ALTER TABLE rounds.cell_scores ADD COLUMN in80 BOOLEAN;
ALTER TABLE rounds.cell_scores ADD COLUMN in90 BOOLEAN;
ALTER TABLE rounds.cell_scores ADD COLUMN in95 BOOLEAN;
-- cells scored before this migration (Gaussian, Laplace and point submissions)
UPDATE rounds.cell_scores
SET r_abs = r,
    in50 = u BETWEEN 0.25 AND 0.75,
    in80 = u BETWEEN 0.10 AND 0.90,
    in90 = u BETWEEN 0.05 AND 0.95,
    in95 = u BETWEEN 0.025 AND 0.975;
