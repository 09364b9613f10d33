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
-- b = sigma / sqrt 2, student_t with df) and whether the actual lies in the central
-- 50/80/90/95% intervals. A point forecast (no sigma) gets r only. Footprints and other
-- submissions play no part.
--
-- The Student-t CDF: for a whole df from 2 to 100, its closed form (Abramowitz and
-- Stegun 26.7.3-4; theta = atan(|w| / sqrt df), c = cos^2 theta = df / (df + w^2)):
-- A = 2 P(T <= |w|) - 1 is (2 / pi) (theta + sin theta cos theta p(c)) for an odd df
-- and sin theta p(c) for an even one, p the polynomial of floor(df / 2) terms whose
-- coefficients, in getvariable('t_series') below, are the products of 2j / (2j + 1)
-- (odd df) or (2j - 1) / 2j (even df) for j <= k. It agrees with scipy's stdtr, the
-- published evaluator's, to 2e-15 and costs a tenth of a Python call. Any other df goes
-- to the Python UDF eval_t_cdf (stdtr itself: SQL has no incomplete beta function); df 1
-- too, where stdtr strays from the exact 1/2 + atan(w) / pi by 1e-9 near 0 and parity
-- keeps stdtr's values.
SET VARIABLE t_series = CASE
    WHEN getvariable('family') = 'student_t' AND getvariable('df') = round(getvariable('df'))
         AND getvariable('df') BETWEEN 2 AND 100
    THEN list_transform(
        range(0, CAST(floor(getvariable('df') / 2) AS BIGINT)),
        lambda k: coalesce(list_aggregate(list_transform(
            range(1, k + 1),
            lambda j: CASE WHEN getvariable('df') % 2 = 1 THEN 2 * j / (2 * j + 1)
                           ELSE (2 * j - 1) / (2 * j) END), 'product'), 1.0))
END;

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
single_e AS (
    -- a Gaussian cell's exponent exp(-w^2 / 2), shared by its tail, density and CRPS
    SELECT *,
           CASE WHEN getvariable('family') = 'gaussian' THEN exp(-aw * aw / 2) END AS gauss_exp
    FROM single_w
),
single_t AS (
    SELECT *,
           CASE WHEN getvariable('family') = 'gaussian'
                THEN eval.norm_tail_given(aw, gauss_exp) END AS tail,
           CASE WHEN getvariable('family') = 'student_t' THEN CASE
                WHEN getvariable('t_series') IS NULL THEN eval_t_cdf(aw, getvariable('df'))
                WHEN getvariable('df') % 2 = 1
                THEN 0.5 + (atan(aw / sqrt(getvariable('df')))
                            + aw * sqrt(getvariable('df')) / (getvariable('df') + aw * aw)
                              * t_poly) / pi()
                ELSE 0.5 + 0.5 * aw / sqrt(getvariable('df') + aw * aw) * t_poly
           END END AS t_cdf_abs
    FROM (SELECT *,
                 -- p(c) by Horner's rule (the series' last coefficient first)
                 CASE WHEN getvariable('t_series') IS NOT NULL
                      THEN list_reduce(list_reverse(getvariable('t_series')),
                                       lambda acc, a: acc * getvariable('df')
                                                      / (getvariable('df') + aw * aw) + a)
                 END AS t_poly
          FROM single_e)
),
single_scored AS (
    -- w = (actual - mu) / s; nll, crps, z and u are NULL together when s is.
    SELECT
        * EXCLUDE (s, w, aw, gauss_exp, tail, t_poly, t_cdf_abs),
        CASE getvariable('family')
            WHEN 'gaussian' THEN 0.5 * ln(2 * pi()) + ln(s) + w * w / 2
            WHEN 'laplace' THEN ln(2 * s / sqrt(2)) + aw * sqrt(2)
            WHEN 'student_t' THEN ln(s) - eval.t_logpdf(w, getvariable('df'))
        END AS nll,
        CASE getvariable('family')
            -- Phi(w) = 1 - tail when w > 0, else tail; w (2 Phi(w) - 1) = |w| (1 - 2 tail).
            WHEN 'gaussian'
            THEN s * (aw * (1 - 2 * tail) + 2 * gauss_exp / sqrt(2 * pi()) - 1 / sqrt(pi()))
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
