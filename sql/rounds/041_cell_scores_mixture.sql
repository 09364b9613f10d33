-- Per-cell scores of ONE mixture submission of a round (getvariable('submission_id'), its
-- family and df; rounds.forecast_components, K > 1 components with a sigma each) on the
-- cells resolution getvariable('resolution_id') resolved in its round, into
-- rounds.cell_scores, with the terms and rules of sql/eval/051: an exact equal-weight
-- mixture; point = mean mu_k (r = point - actual), moment-matched sigma = sqrt(mean
-- sigma_k^2 + var mu_k) for z, NLL via logsumexp, closed-form Gaussian (Grimit) and
-- Laplace mixture CRPS (Student-t mixtures: none), u = mean_k F_k(actual) and the
-- central-interval flags from u. A cell is scored when every component's mu is finite
-- and, under rules `paper` (getvariable('paper')), every sigma is finite and > 0 (then
-- floored at 1e-4); otherwise a cell with an unusable sigma keeps its point scores only.
INSERT INTO rounds.cell_scores BY NAME
WITH truth AS (
    SELECT t.gvkey, t.item_id, t.horizon, t.actual::DOUBLE AS actual
    FROM rounds.truth AS t
    JOIN rounds.submissions AS s USING (round_id)
    WHERE s.submission_id = getvariable('submission_id')
      AND t.resolution_id = getvariable('resolution_id')
      AND isfinite(t.actual) AND isfinite(t.baseline)
),
comp AS NOT MATERIALIZED (
    SELECT
        t.gvkey, t.item_id, t.horizon, t.actual, f.component, f.mu,
        f.sigma IS NOT NULL AND isfinite(f.sigma) AND f.sigma > 0 AS sigma_ok,
        CASE WHEN f.sigma IS NOT NULL AND isfinite(f.sigma) AND f.sigma > 0
             THEN greatest(f.sigma, CASE WHEN getvariable('paper') THEN 1e-4 ELSE 0.0 END)
             ELSE 1.0 END AS s,
        isfinite(f.mu) AND (NOT getvariable('paper') OR f.sigma IS NULL
                            OR (isfinite(f.sigma) AND f.sigma > 0)) AS ok
    FROM rounds.forecast_components AS f
    JOIN truth AS t USING (gvkey, item_id, horizon)
    WHERE f.submission_id = getvariable('submission_id')
),
comp_w AS NOT MATERIALIZED (
    SELECT *, (actual - mu) / s AS w, abs((actual - mu) / s) AS aw FROM comp
),
comp_t AS NOT MATERIALIZED (
    SELECT *,
           CASE WHEN getvariable('family') = 'gaussian' THEN eval.norm_tail(aw) END AS tail,
           CASE WHEN getvariable('family') = 'student_t'
                THEN eval_t_cdf(w, getvariable('df')) END AS t_cdf
    FROM comp_w
),
comp_terms AS MATERIALIZED (
    SELECT
        gvkey, item_id, horizon, actual, component, mu, s, ok, sigma_ok,
        CASE getvariable('family')
            WHEN 'gaussian' THEN -0.5 * ln(2 * pi()) - ln(s) - w * w / 2
            WHEN 'laplace' THEN -ln(2 * s / sqrt(2)) - aw * sqrt(2)
            ELSE eval.t_logpdf(w, getvariable('df')) - ln(s)
        END AS lp,
        CASE getvariable('family')
            WHEN 'gaussian' THEN CASE WHEN w > 0 THEN 1 - tail ELSE tail END
            WHEN 'laplace' THEN CASE WHEN w < 0 THEN 0.5 * exp(w * sqrt(2))
                                     ELSE 1 - 0.5 * exp(-w * sqrt(2)) END
            ELSE t_cdf
        END AS cdf,
        CASE getvariable('family')
            WHEN 'gaussian' THEN s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw))
            WHEN 'laplace' THEN s * aw + s / sqrt(2) * exp(-aw * sqrt(2))
        END AS t1,
        CASE getvariable('family')
            WHEN 'gaussian' THEN 2 * s / sqrt(pi())
            WHEN 'laplace' THEN 1.5 * s / sqrt(2)
        END AS diagonal
    FROM comp_t
),
pairs AS (
    SELECT gvkey, item_id, horizon,
           sum(CASE getvariable('family')
                   WHEN 'gaussian' THEN sp * (ap * (1 - 2 * eval.norm_tail(ap)) + 2 * eval.norm_pdf(ap))
                   WHEN 'laplace' THEN eval.laplace_pair(dm, ba, bb)
               END) AS off_diagonal
    FROM (
        SELECT a.gvkey, a.item_id, a.horizon,
               a.mu - b.mu AS dm, sqrt(a.s * a.s + b.s * b.s) AS sp,
               abs(a.mu - b.mu) / sqrt(a.s * a.s + b.s * b.s) AS ap,
               a.s / sqrt(2) AS ba, b.s / sqrt(2) AS bb
        FROM comp_terms a
        JOIN comp_terms b
          ON b.gvkey = a.gvkey AND b.item_id = a.item_id AND b.horizon = a.horizon
         AND b.component > a.component
    )
    GROUP BY gvkey, item_id, horizon
),
per_cell AS (
    SELECT
        gvkey, item_id, horizon,
        any_value(actual) AS actual,
        count(*) AS k,
        avg(mu) AS point,
        sqrt(avg(s * s) + var_pop(mu)) AS s_mm,
        sum(exp(lp)) AS density_sum,
        max(lp) AS lp_max,
        avg(cdf) AS u_mix,
        avg(t1) AS t1,
        sum(diagonal) AS diagonal,
        bool_and(sigma_ok) AS has_density
    FROM comp_terms
    GROUP BY gvkey, item_id, horizon
    HAVING bool_and(ok)
),
tail_fix AS (
    SELECT c.gvkey, c.item_id, c.horizon,
           any_value(m.lp_max) + ln(sum(exp(c.lp - m.lp_max))) AS log_sum
    FROM comp_terms c
    JOIN (SELECT gvkey, item_id, horizon, lp_max FROM per_cell
          WHERE NOT (density_sum BETWEEN 1e-290 AND 1e290)) m
      USING (gvkey, item_id, horizon)
    GROUP BY c.gvkey, c.item_id, c.horizon
),
mix_scored AS (
    SELECT
        m.gvkey, m.item_id, m.horizon,
        m.point - m.actual AS r,
        CASE WHEN m.has_density THEN ln(m.k) - coalesce(t.log_sum, ln(m.density_sum)) END AS nll,
        CASE WHEN m.has_density AND getvariable('family') IN ('gaussian', 'laplace')
             THEN m.t1 - 0.5 * (m.diagonal + 2 * coalesce(p.off_diagonal, 0)) / (m.k * m.k) END AS crps,
        CASE WHEN m.has_density THEN (m.point - m.actual) / m.s_mm END AS z,
        CASE WHEN m.has_density THEN m.u_mix END AS u
    FROM per_cell m
    LEFT JOIN pairs p USING (gvkey, item_id, horizon)
    LEFT JOIN tail_fix t USING (gvkey, item_id, horizon)
)
SELECT getvariable('submission_id') AS submission_id, gvkey, item_id, horizon,
       r, nll, crps, z, u, r AS r_abs,
       {{ metric_coverage_flags }}
FROM mix_scored;
