-- The temp view mixture_cell_terms: per-cell scores of ONE mixture submission (K > 1
-- components; its family, df and has_sigma in getvariable('family'), ('df'),
-- ('has_sigma')) over {{ cells }}, a relation of (cell, actual, component, mu, sigma):
-- the submission's eval.forecasts rows met with the truth (049's view, for 050's insert)
-- or a round's resolved cells (sql/rounds/040's view, for its insert). The components
-- form an exact equal-weight mixture: point = mean mu_k, moment-matched sigma =
-- sqrt(mean sigma_k^2 + var mu_k) for z, NLL via logsumexp, closed-form Gaussian (Grimit)
-- and Laplace mixture CRPS (Student-t mixtures: none), u = mean_k F_k(actual) and the
-- central-interval flags from u. A cell is scored when every component's mu is finite
-- and, if getvariable('sigma_in_sample') (the paper's rules), every sigma is finite and
-- > 0; otherwise (published) a cell with an unusable sigma keeps its point scores only.
-- Sigma is floored at getvariable('sigma_floor') when set.
-- Row-wise (one row per component), no list lambdas that capture lists: DuckDB
-- evaluates those per element, which made mixtures cost minutes per million cells.
-- Stages compute each argument once (the CDF macros repeat their argument ~20 times).
-- Only comp_terms is materialized (it feeds the pair join, the per-cell aggregate and
-- the tail fix), holding numbers only.
CREATE OR REPLACE TEMP VIEW mixture_cell_terms AS
WITH comp AS NOT MATERIALIZED (
    SELECT
        f.cell, CAST(f.actual AS DOUBLE) AS actual, f.component, f.mu,
        f.sigma IS NOT NULL AND isfinite(f.sigma) AND f.sigma > 0 AS sigma_ok,
        -- 1.0 stands in for a missing or unusable sigma: those cells get no density below.
        CASE WHEN f.sigma IS NOT NULL AND isfinite(f.sigma) AND f.sigma > 0
             THEN greatest(f.sigma, coalesce(getvariable('sigma_floor'), 0.0))
             ELSE 1.0 END AS s,
        isfinite(f.mu) AND (NOT getvariable('sigma_in_sample') OR f.sigma IS NULL
                            OR (isfinite(f.sigma) AND f.sigma > 0)) AS ok
    FROM {{ cells }} f
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
    -- Per component: log density lp, CDF F_k(actual), the first CRPS term
    -- E|X_k - y| (Gneiting's A = s (|w| (1 - 2 tail) + 2 phi(w)) for Gaussians;
    -- |d| + b exp(-|d| / b) for Laplace) and the diagonal pair term E|X_k - X_k'| of
    -- two independent copies (2 s / sqrt(pi); 3 b / 2 with b = s / sqrt 2).
    SELECT
        cell, actual, component, mu, s, ok, sigma_ok,
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
    -- The sum over unordered pairs a < b of E|X_a - X_b| in each cell (K (K - 1) / 2
    -- join rows: one for K = 2, a quarter of the K^2 ordered pairs).
    SELECT cell,
           sum(CASE getvariable('family')
                   WHEN 'gaussian' THEN sp * (ap * (1 - 2 * eval.norm_tail(ap)) + 2 * eval.norm_pdf(ap))
                   WHEN 'laplace' THEN eval.laplace_pair(dm, ba, bb)
               END) AS off_diagonal
    FROM (
        SELECT a.cell,
               a.mu - b.mu AS dm, sqrt(a.s * a.s + b.s * b.s) AS sp,
               abs(a.mu - b.mu) / sqrt(a.s * a.s + b.s * b.s) AS ap,
               a.s / sqrt(2) AS ba, b.s / sqrt(2) AS bb
        FROM comp_terms a
        JOIN comp_terms b ON b.cell = a.cell AND b.component > a.component
        WHERE getvariable('has_sigma')
    )
    GROUP BY cell
),
per_cell AS (
    -- Equal-weight mixture summaries. The density's sum is taken directly; where it
    -- leaves [1e-290, 1e290] (far tails) tail_fix redoes it relative to the largest lp.
    SELECT
        cell,
        any_value(actual) AS actual,
        count(*) AS k,
        avg(mu) AS point,
        sqrt(avg(s * s) + var_pop(mu)) AS s_mm,
        sum(exp(lp)) AS density_sum,
        max(lp) AS lp_max,
        avg(cdf) AS u_mix,
        avg(t1) AS t1,
        sum(diagonal) AS diagonal,
        getvariable('has_sigma') AND bool_and(sigma_ok) AS has_density
    FROM comp_terms
    GROUP BY cell
    HAVING bool_and(ok)
),
tail_fix AS (
    -- log sum_k exp(lp_k) = lp_max + log sum_k exp(lp_k - lp_max): stable, only for the
    -- (rare) cells whose direct sum under- or overflows.
    SELECT c.cell, any_value(m.lp_max) + ln(sum(exp(c.lp - m.lp_max))) AS log_sum
    FROM comp_terms c
    JOIN (SELECT cell, lp_max FROM per_cell
          WHERE NOT (density_sum BETWEEN 1e-290 AND 1e290)) m
      ON m.cell = c.cell
    GROUP BY c.cell
),
mix_scored AS (
    SELECT
        m.cell,
        m.point - m.actual AS r,
        CASE WHEN m.has_density THEN ln(m.k) - coalesce(t.log_sum, ln(m.density_sum)) END AS nll,
        CASE WHEN m.has_density AND getvariable('family') IN ('gaussian', 'laplace')
             THEN m.t1 - 0.5 * (m.diagonal + 2 * coalesce(p.off_diagonal, 0)) / (m.k * m.k) END AS crps,
        CASE WHEN m.has_density THEN (m.point - m.actual) / m.s_mm END AS z,
        CASE WHEN m.has_density THEN m.u_mix END AS u
    FROM per_cell m
    LEFT JOIN pairs p USING (cell)
    LEFT JOIN tail_fix t USING (cell)
)
SELECT
    cell, r, nll, crps, z, u,
    {{ metric_coverage_flags }}
FROM mix_scored;
