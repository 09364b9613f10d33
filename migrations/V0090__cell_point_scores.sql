-- Cell scores of point-only submissions (one component, no sigma, not a quantile grid)
-- get a table of their own with only (submission_id, cell, r): in the wide table their
-- nine density columns are all NULL, and writing them cost DuckDB more than the cell and
-- residual themselves (10M point cells: 1.7 s into the wide table, 0.5 s into this one).
-- eval.cell_scores becomes a view over both tables, so readers see one row per scored
-- cell as before; writers and the aggregates name the table they need.
ALTER TABLE eval.cell_scores RENAME TO cell_density_scores;

CREATE TABLE eval.cell_point_scores (
    submission_id  INTEGER NOT NULL,
    cell           BIGINT NOT NULL,
    r              DOUBLE NOT NULL             -- point - actual
);

INSERT INTO eval.cell_point_scores
SELECT c.submission_id, c.cell, c.r
FROM eval.cell_density_scores c
JOIN eval.submissions s USING (submission_id)
WHERE NOT s.has_sigma AND s.family <> 'quantile' AND s.n_components = 1;

DELETE FROM eval.cell_density_scores
WHERE submission_id IN (SELECT submission_id FROM eval.submissions
                        WHERE NOT has_sigma AND family <> 'quantile' AND n_components = 1);

CREATE VIEW eval.cell_scores AS
SELECT submission_id, cell, r, r_abs, nll, crps, z, u, in50, in80, in90, in95
FROM eval.cell_density_scores
UNION ALL
SELECT submission_id, cell, r, NULL::DOUBLE AS r_abs, NULL::DOUBLE AS nll,
       NULL::DOUBLE AS crps, NULL::DOUBLE AS z, NULL::DOUBLE AS u, NULL::BOOLEAN AS in50,
       NULL::BOOLEAN AS in80, NULL::BOOLEAN AS in90, NULL::BOOLEAN AS in95
FROM eval.cell_point_scores;
