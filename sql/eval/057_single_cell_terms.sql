-- The temp view single_cell_terms: per-cell scores of ONE single-forecast submission
-- (its family and df in getvariable('family'), getvariable('df')) over the identifier
-- cells, a relation of (cell, mu, sigma, actual) and any other columns, passed through:
-- the submission's forecasts joined with the truth cells of finite actual and baseline
-- (049's view, for forecasts in eval.forecasts, read by 050), or the same cells met by
-- position in the cell grid (proforma.app.scoring.grid, for a file in the upload store,
-- read by 067). A cell is scored when mu is finite and, if getvariable('sigma_in_sample')
-- (the paper's rules), every given sigma is finite and > 0; otherwise (the published
-- rules) a cell with an unusable sigma keeps its point scores and gets no density terms.
-- Sigma is floored at getvariable('sigma_floor') when set (paper 1e-4; published: none).
-- Scores: residual r = mu - actual (published: rounded to float32 like sigma, as the
-- published evaluator stores both; its scores then agree to 1e-11 even where an R2 is
-- near 0), NLL, CRPS, z = r / sigma, PIT u = F(actual) by the submission's family and
-- whether the actual lies in the central intervals of the coverage levels. A point
-- forecast (no sigma) gets r only. Footprints and other submissions play no part.
--
-- What differs by family (its log density, CDF and CRPS over w = (actual - mu) / s and
-- aw = |w|, the helper columns they share and the per-submission constants, such as the
-- Student-t's closed-form CDF series) is the family registry's
-- (proforma.contracts.families), filled into the family slots when the step is
-- read (proforma.app.store.family_sql).
{{ family_setup }}

CREATE OR REPLACE TEMP VIEW single_cell_terms AS
WITH single AS (
    SELECT
        f.* EXCLUDE (mu, sigma, actual),
        -- the published evaluator keeps residuals and sigmas in float32 arrays
        CASE WHEN getvariable('float32_residuals') THEN CAST(f.mu - f.actual AS FLOAT)::DOUBLE
             ELSE f.mu - f.actual END AS r,
        -- the rules float32_residuals and sigma_floor each apply whatever the other says
        CASE WHEN f.sigma IS NULL OR NOT (isfinite(f.sigma) AND f.sigma > 0) THEN NULL
             ELSE greatest(CASE WHEN getvariable('float32_residuals')
                                THEN CAST(f.sigma AS FLOAT)::DOUBLE ELSE f.sigma END,
                           coalesce(getvariable('sigma_floor'), 0.0)) END AS s
    FROM {{ cells }} f
    WHERE isfinite(f.mu)
      AND (NOT getvariable('sigma_in_sample') OR f.sigma IS NULL
           OR (isfinite(f.sigma) AND f.sigma > 0))
),
single_w AS (
    -- Stages keep each expression computed once per row (the CDF is a long polynomial).
    SELECT *, -r / s AS w, abs(r / s) AS aw FROM single
),
{{ family_single_helpers }},
single_scored AS (
    -- w = (actual - mu) / s; nll, crps, z and u are NULL together when s is.
    SELECT
        * EXCLUDE ({{ family_single_scratch }}),
        {{ family_single_nll }} AS nll,
        {{ family_single_crps }} AS crps,
        r / s AS z,
        {{ family_single_cdf }} AS u
    FROM single_helped
)
SELECT
    *,
    {{ metric_coverage_flags }}
FROM single_scored;
