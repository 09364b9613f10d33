-- Per-cell scores of every submission in a run (temp view cell_scores) from
-- common_cells, eval.forecasts and run_subs, on the cells each submission predicts
-- finitely (with more than one submission common_cells holds only cells all do): change y, residual r = point - actual, and
-- for density submissions (sigma floored at 1e-4) NLL, CRPS, z = r / sigma and PIT u by
-- family (gaussian, laplace with b = sigma / sqrt 2, student_t with df). K > 1
-- components form an exact equal-weight mixture: NLL via logsumexp, closed-form
-- Gaussian (Grimit) and Laplace mixture CRPS, u = mean_k F_k(y), point = mean mu_k,
-- moment-matched sigma = sqrt(mean sigma_k^2 + var mu_k). The Student-t CDF is the
-- Python UDF eval_t_cdf (SQL has no incomplete beta function). Views:
-- cell_scores_single (K = 1), cell_scores_mixture (K > 1, the submissions in the temp
-- table run_mixture_subs: the scorer sets one at a time) and cell_scores (both).
CREATE OR REPLACE TEMP VIEW cell_scores_single AS
WITH single AS (
    SELECT
        f.submission_id, f.origin_q, f.item_id, f.horizon,
        c.change AS y, c.actual, f.mu,
        f.mu - c.actual AS r,
        CASE WHEN f.sigma IS NULL THEN NULL ELSE greatest(f.sigma, 1e-4) END AS s,
        r.family, r.df
    FROM common_cells c
    JOIN eval.forecasts f
      ON eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) = c.cell
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components = 1
    WHERE isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0))
),
single_w AS (
    -- Stages keep each expression computed once per row (the CDF is a long polynomial).
    SELECT *, r / s AS w, abs(r / s) AS aw FROM single
),
single_t AS (
    SELECT *,
           CASE WHEN family = 'gaussian' THEN eval.norm_tail(aw) END AS tail,
           CASE WHEN family = 'student_t' THEN eval_t_cdf(aw, df) END AS t_cdf_abs
    FROM single_w
),
single_scored AS (
    SELECT
        submission_id, origin_q, item_id, horizon, y, r,
        CASE family
            WHEN 'gaussian' THEN 0.5 * ln(2 * pi()) + ln(s) + w * w / 2
            WHEN 'laplace' THEN ln(2 * s / sqrt(2)) + aw * sqrt(2)
            WHEN 'student_t' THEN ln(s) - eval.t_logpdf(w, df)
        END AS nll,
        CASE family
            -- Phi(w) = 1 - tail when w > 0, else tail; w (2 Phi(w) - 1) = |w| (1 - 2 tail).
            WHEN 'gaussian' THEN s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw) - 1 / sqrt(pi()))
            WHEN 'laplace' THEN (s / sqrt(2)) * (aw * sqrt(2) + exp(-aw * sqrt(2)) - 0.75)
            WHEN 'student_t' THEN CASE WHEN df > 1 THEN s * (
                aw * (2 * t_cdf_abs - 1)
                + 2 * exp(eval.t_logpdf(aw, df)) * (df + aw * aw) / (df - 1)
                - 2 * sqrt(df) * eval.beta_fn(0.5, df - 0.5)
                  / ((df - 1) * eval.beta_fn(0.5, df / 2) * eval.beta_fn(0.5, df / 2))) END
        END AS crps,
        w AS z,
        -- PIT u = F(actual) = F_0(-w): the upper tail of |w| when w > 0.
        CASE family
            WHEN 'gaussian' THEN CASE WHEN w > 0 THEN tail ELSE 1 - tail END
            WHEN 'laplace' THEN CASE WHEN w > 0 THEN 0.5 * exp(-aw * sqrt(2))
                                     ELSE 1 - 0.5 * exp(-aw * sqrt(2)) END
            WHEN 'student_t' THEN CASE WHEN w > 0 THEN 1 - t_cdf_abs ELSE t_cdf_abs END
        END AS u
    FROM single_t
)
SELECT * FROM single_scored;

CREATE OR REPLACE TEMP VIEW cell_scores_mixture AS
-- Row-wise (one row per component), no list lambdas that capture lists: DuckDB
-- evaluates those per element, which made mixtures cost minutes per million cells.
-- Stages compute each argument once (the CDF macros repeat their argument ~20 times).
-- Only comp_terms is materialized (it feeds the pair join, the per-cell aggregate and
-- the tail fix), holding numbers only: the family travels as a code (0 gaussian,
-- 1 laplace, 2 student_t), not a string per row.
WITH comp AS NOT MATERIALIZED (
    SELECT
        f.submission_id, c.cell, c.change AS y, c.actual, r.family, r.df, f.component, f.mu,
        greatest(coalesce(f.sigma, 1.0), 1e-4) AS s,
        isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0)) AS ok
    FROM common_cells c
    JOIN eval.forecasts f
      ON eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) = c.cell
    JOIN run_mixture_subs m ON m.submission_id = f.submission_id
    JOIN run_subs r ON r.submission_id = f.submission_id
),
comp_w AS NOT MATERIALIZED (
    SELECT *, (actual - mu) / s AS w, abs((actual - mu) / s) AS aw FROM comp
),
comp_t AS NOT MATERIALIZED (
    SELECT *,
           CASE WHEN family = 'gaussian' THEN eval.norm_tail(aw) END AS tail,
           CASE WHEN family = 'student_t' THEN eval_t_cdf(w, df) END AS t_cdf
    FROM comp_w
),
comp_terms AS MATERIALIZED (
    -- Per component: log density lp, CDF F_k(actual), the first CRPS term
    -- E|X_k - y| (Gneiting's A = s (|w| (1 - 2 tail) + 2 phi(w)) for Gaussians;
    -- |d| + b exp(-|d| / b) for Laplace) and the diagonal pair term E|X_k - X_k'| of
    -- two independent copies (2 s / sqrt(pi); 3 b / 2 with b = s / sqrt 2).
    SELECT
        submission_id, cell, y, actual, component, mu, s, ok,
        CAST(CASE family WHEN 'gaussian' THEN 0 WHEN 'laplace' THEN 1 ELSE 2 END AS UTINYINT) AS fam,
        CASE family
            WHEN 'gaussian' THEN -0.5 * ln(2 * pi()) - ln(s) - w * w / 2
            WHEN 'laplace' THEN -ln(2 * s / sqrt(2)) - aw * sqrt(2)
            ELSE eval.t_logpdf(w, df) - ln(s)
        END AS lp,
        CASE family
            WHEN 'gaussian' THEN CASE WHEN w > 0 THEN 1 - tail ELSE tail END
            WHEN 'laplace' THEN CASE WHEN w < 0 THEN 0.5 * exp(w * sqrt(2))
                                     ELSE 1 - 0.5 * exp(-w * sqrt(2)) END
            ELSE t_cdf
        END AS cdf,
        CASE family
            WHEN 'gaussian' THEN s * (aw * (1 - 2 * tail) + 2 * eval.norm_pdf(aw))
            WHEN 'laplace' THEN s * aw + s / sqrt(2) * exp(-aw * sqrt(2))
        END AS t1,
        CASE family
            WHEN 'gaussian' THEN 2 * s / sqrt(pi())
            WHEN 'laplace' THEN 1.5 * s / sqrt(2)
        END AS diagonal
    FROM comp_t
),
pairs AS (
    -- The sum over unordered pairs a < b of E|X_a - X_b| in each cell (K (K - 1) / 2
    -- join rows: one for K = 2, a quarter of the K^2 ordered pairs).
    SELECT submission_id, cell,
           sum(CASE fam
                   WHEN 0 THEN sp * (ap * (1 - 2 * eval.norm_tail(ap)) + 2 * eval.norm_pdf(ap))
                   WHEN 1 THEN eval.laplace_pair(dm, ba, bb)
               END) AS off_diagonal
    FROM (
        SELECT a.submission_id, a.cell, a.fam,
               a.mu - b.mu AS dm, sqrt(a.s * a.s + b.s * b.s) AS sp,
               abs(a.mu - b.mu) / sqrt(a.s * a.s + b.s * b.s) AS ap,
               a.s / sqrt(2) AS ba, b.s / sqrt(2) AS bb
        FROM comp_terms a
        JOIN comp_terms b
          ON b.submission_id = a.submission_id AND b.cell = a.cell AND b.component > a.component
    )
    GROUP BY submission_id, cell
),
per_cell AS (
    -- Equal-weight mixture summaries. The density's sum is taken directly; where it
    -- leaves [1e-290, 1e290] (far tails) tail_fix redoes it relative to the largest lp.
    SELECT
        submission_id, cell,
        any_value(y) AS y, any_value(actual) AS actual,
        count(*) AS k,
        avg(mu) AS point,
        sqrt(avg(s * s) + var_pop(mu)) AS s_mm,
        sum(exp(lp)) AS density_sum,
        max(lp) AS lp_max,
        avg(cdf) AS u_mix,
        avg(t1) AS t1,
        sum(diagonal) AS diagonal
    FROM comp_terms
    GROUP BY submission_id, cell
    HAVING bool_and(ok)
),
tail_fix AS (
    -- log sum_k exp(lp_k) = lp_max + log sum_k exp(lp_k - lp_max): stable, only for the
    -- (rare) cells whose direct sum under- or overflows.
    SELECT c.submission_id, c.cell, any_value(m.lp_max) + ln(sum(exp(c.lp - m.lp_max))) AS log_sum
    FROM comp_terms c
    JOIN (SELECT submission_id, cell, lp_max FROM per_cell
          WHERE NOT (density_sum BETWEEN 1e-290 AND 1e290)) m
      ON m.submission_id = c.submission_id AND m.cell = c.cell
    GROUP BY c.submission_id, c.cell
),
mix_scored AS (
    SELECT
        m.submission_id,
        CAST(m.cell // 4096 % 16384 AS INTEGER) AS origin_q,
        CAST(m.cell // 32 % 128 AS SMALLINT) AS item_id,
        CAST(m.cell % 32 AS TINYINT) AS horizon,
        m.y,
        m.point - m.actual AS r,
        CASE WHEN r.has_sigma THEN ln(m.k) - coalesce(t.log_sum, ln(m.density_sum)) END AS nll,
        CASE WHEN r.has_sigma AND r.family IN ('gaussian', 'laplace')
             THEN m.t1 - 0.5 * (m.diagonal + 2 * coalesce(p.off_diagonal, 0)) / (m.k * m.k) END AS crps,
        CASE WHEN r.has_sigma THEN (m.point - m.actual) / m.s_mm END AS z,
        CASE WHEN r.has_sigma THEN m.u_mix END AS u
    FROM per_cell m
    LEFT JOIN pairs p USING (submission_id, cell)
    LEFT JOIN tail_fix t USING (submission_id, cell)
    JOIN run_subs r USING (submission_id)
)
SELECT * FROM mix_scored;

CREATE OR REPLACE TEMP VIEW cell_scores AS
SELECT * FROM cell_scores_single
UNION ALL
SELECT * FROM cell_scores_mixture;
