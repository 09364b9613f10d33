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
-- near 0), NLL, CRPS, z = r / sigma, PIT u = F(actual) by family (gaussian, laplace with
-- b = sigma / sqrt 2, student_t with df; the Student-t CDF is the Python UDF eval_t_cdf,
-- SQL has no incomplete beta function) and whether the actual lies in the central
-- 50/80/90/95% intervals. A point forecast (no sigma) gets r only. Footprints and other
-- submissions play no part.
CREATE OR REPLACE TEMP VIEW single_cell_terms AS
WITH single AS (
    SELECT
        f.* EXCLUDE (mu, sigma, actual),
        -- the published evaluator keeps residuals and sigmas in float32 arrays
        CASE WHEN getvariable('float32_residuals') THEN CAST(f.mu - f.actual AS FLOAT)::DOUBLE
             ELSE f.mu - f.actual END AS r,
        CASE WHEN f.sigma IS NULL OR NOT (isfinite(f.sigma) AND f.sigma > 0) THEN NULL
             WHEN getvariable('float32_residuals') THEN CAST(f.sigma AS FLOAT)::DOUBLE
             ELSE greatest(f.sigma, coalesce(getvariable('sigma_floor'), 0.0)) END AS s
    FROM {{ cells }} f
    WHERE isfinite(f.mu)
      AND (NOT getvariable('sigma_in_sample') OR f.sigma IS NULL
           OR (isfinite(f.sigma) AND f.sigma > 0))
),
single_w AS (
    -- Stages keep each expression computed once per row (the CDF is a long polynomial).
    SELECT *, -r / s AS w, abs(r / s) AS aw FROM single
),
single_t AS (
    SELECT *,
           CASE WHEN getvariable('family') = 'gaussian' THEN eval.norm_tail(aw) END AS tail,
           CASE WHEN getvariable('family') = 'student_t'
                THEN eval_t_cdf(aw, getvariable('df')) END AS t_cdf_abs
    FROM single_w
),
single_scored AS (
    -- w = (actual - mu) / s; nll, crps, z and u are NULL together when s is.
    SELECT
        * EXCLUDE (s, w, aw, tail, t_cdf_abs),
        CASE getvariable('family')
            WHEN 'gaussian' THEN 0.5 * ln(2 * pi()) + ln(s) + w * w / 2
            WHEN 'laplace' THEN ln(2 * s / sqrt(2)) + aw * sqrt(2)
            WHEN 'student_t' THEN ln(s) - eval.t_logpdf(w, getvariable('df'))
        END AS nll,
        CASE getvariable('family')
            -- Phi(w) = 1 - tail when w > 0, else tail; w (2 Phi(w) - 1) = |w| (1 - 2 tail).
            WHEN 'gaussian' THEN s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw) - 1 / sqrt(pi()))
            WHEN 'laplace' THEN (s / sqrt(2)) * (aw * sqrt(2) + exp(-aw * sqrt(2)) - 0.75)
            WHEN 'student_t' THEN CASE WHEN getvariable('df') > 1 THEN s * (
                aw * (2 * t_cdf_abs - 1)
                + 2 * exp(eval.t_logpdf(aw, getvariable('df'))) * (getvariable('df') + aw * aw)
                  / (getvariable('df') - 1)
                - 2 * sqrt(getvariable('df')) * eval.beta_fn(0.5, getvariable('df') - 0.5)
                  / ((getvariable('df') - 1) * eval.beta_fn(0.5, getvariable('df') / 2)
                     * eval.beta_fn(0.5, getvariable('df') / 2))) END
        END AS crps,
        r / s AS z,
        -- PIT u = F(actual) = F_0(w): the upper tail of |w| when w < 0.
        CASE getvariable('family')
            WHEN 'gaussian' THEN CASE WHEN w < 0 THEN tail ELSE 1 - tail END
            WHEN 'laplace' THEN CASE WHEN w < 0 THEN 0.5 * exp(-aw * sqrt(2))
                                     ELSE 1 - 0.5 * exp(-aw * sqrt(2)) END
            WHEN 'student_t' THEN CASE WHEN w < 0 THEN 1 - t_cdf_abs ELSE t_cdf_abs END
        END AS u
    FROM single_t
)
SELECT
    *,
    u BETWEEN 0.25 AND 0.75 AS in50,
    u BETWEEN 0.10 AND 0.90 AS in80,
    u BETWEEN 0.05 AND 0.95 AS in90,
    u BETWEEN 0.025 AND 0.975 AS in95
FROM single_scored;
