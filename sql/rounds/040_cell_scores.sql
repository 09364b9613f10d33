-- Per-cell scores of the cells resolution getvariable('resolution_id') resolved, for every
-- submission of their rounds, into rounds.cell_scores, with the terms and rules of
-- sql/eval/050 (single forecasts) and 053 (point forecasts): cells with finite actual,
-- baseline and mu; r = mu - actual (rules `published`, getvariable('float32_residuals'):
-- rounded to float32, as is sigma); a density (gaussian, or laplace with b = sigma/sqrt 2)
-- where sigma is finite and > 0 (rules `paper`, getvariable('sigma_in_sample'): a cell
-- with an unusable sigma is not scored at all; sigma floored at getvariable('sigma_floor')
-- when set): NLL, CRPS, z = r / sigma and PIT u = F(actual). Each round has its own rule
-- set (rounds.rounds.rules): the rules of the build it was opened on.
INSERT INTO rounds.cell_scores
WITH cells AS (
    SELECT s.submission_id, s.family, r.rules, t.gvkey, t.item_id, t.horizon,
           t.actual::DOUBLE AS actual, f.mu, f.sigma
    FROM rounds.truth AS t
    JOIN rounds.rounds AS r USING (round_id)
    JOIN rounds.submissions AS s USING (round_id)
    JOIN rounds.forecasts AS f
      ON f.submission_id = s.submission_id AND f.gvkey = t.gvkey AND f.item_id = t.item_id
     AND f.horizon = t.horizon
    WHERE t.resolution_id = getvariable('resolution_id')
      AND isfinite(t.actual) AND isfinite(t.baseline) AND isfinite(f.mu)
      AND (r.rules <> 'paper' OR f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0))
),
single AS (
    SELECT submission_id, family, gvkey, item_id, horizon,
           CASE WHEN rules = 'published' THEN CAST(mu - actual AS FLOAT)::DOUBLE
                ELSE mu - actual END AS r,
           CASE WHEN sigma IS NULL OR NOT (isfinite(sigma) AND sigma > 0) THEN NULL
                WHEN rules = 'published' THEN CAST(sigma AS FLOAT)::DOUBLE
                ELSE greatest(sigma, 1e-4) END AS s
    FROM cells
),
w AS (
    SELECT *, -r / s AS w, abs(r / s) AS aw,
           CASE WHEN family = 'gaussian' THEN eval.norm_tail(abs(r / s)) END AS tail
    FROM single
)
SELECT submission_id, gvkey, item_id, horizon, r,
       CASE family
           WHEN 'gaussian' THEN 0.5 * ln(2 * pi()) + ln(s) + w * w / 2
           WHEN 'laplace' THEN ln(2 * s / sqrt(2)) + aw * sqrt(2)
       END AS nll,
       CASE family
           WHEN 'gaussian' THEN s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw) - 1 / sqrt(pi()))
           WHEN 'laplace' THEN (s / sqrt(2)) * (aw * sqrt(2) + exp(-aw * sqrt(2)) - 0.75)
       END AS crps,
       r / s AS z,
       CASE family
           WHEN 'gaussian' THEN CASE WHEN w < 0 THEN tail ELSE 1 - tail END
           WHEN 'laplace' THEN CASE WHEN w < 0 THEN 0.5 * exp(-aw * sqrt(2))
                                    ELSE 1 - 0.5 * exp(-aw * sqrt(2)) END
       END AS u
FROM w;
