-- Per-cell scores of every submission in a run (temp view cell_scores) from
-- common_cells, eval.forecasts and run_subs, on the cells each submission predicts
-- finitely (with more than one submission common_cells holds only cells all do): change y, residual r = point - actual, and
-- for density submissions (sigma floored at 1e-4) NLL, CRPS, z = r / sigma and PIT u by
-- family (gaussian, laplace with b = sigma / sqrt 2, student_t with df). K > 1
-- components form an exact equal-weight mixture: NLL via logsumexp, closed-form
-- Gaussian (Grimit) and Laplace mixture CRPS, u = mean_k F_k(y), point = mean mu_k,
-- moment-matched sigma = sqrt(mean sigma_k^2 + var mu_k). The Student-t CDF is the
-- Python UDF eval_t_cdf (SQL has no incomplete beta function). Views:
-- cell_scores_single (K = 1), cell_scores_mixture (K > 1) and cell_scores (both); 070
-- reads the one the run needs, so an absent kind costs no join.
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
WITH mix AS (
    SELECT
        f.submission_id, f.origin_q, f.item_id, f.horizon,
        c.change AS y, c.actual, r.family, r.df, r.has_sigma,
        list(f.mu ORDER BY f.component) AS mus,
        list(greatest(coalesce(f.sigma, 1.0), 1e-4) ORDER BY f.component) AS sds
    FROM common_cells c
    JOIN eval.forecasts f
      ON eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) = c.cell
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components > 1
    GROUP BY f.submission_id, c.cell, f.origin_q, f.item_id, f.horizon,
             c.change, c.actual, r.family, r.df, r.has_sigma
    HAVING bool_and(isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0)))
),
mix_parts AS (
    SELECT
        *,
        len(mus) AS k,
        list_avg(mus) AS point,
        sqrt(list_avg(list_transform(sds, lambda s: s * s)) + list_var_pop(mus)) AS s_mm,
        list_transform(range(1, len(mus) + 1), lambda j:
            CASE family
                WHEN 'gaussian' THEN -0.5 * ln(2 * pi()) - ln(sds[j])
                                     - (actual - mus[j]) * (actual - mus[j]) / (2 * sds[j] * sds[j])
                WHEN 'laplace' THEN -ln(2 * sds[j] / sqrt(2)) - abs(actual - mus[j]) / (sds[j] / sqrt(2))
                ELSE eval.t_logpdf((actual - mus[j]) / sds[j], df) - ln(sds[j])
            END) AS lp,
        list_avg(list_transform(range(1, len(mus) + 1), lambda j:
            CASE family
                WHEN 'gaussian' THEN eval.norm_cdf((actual - mus[j]) / sds[j])
                WHEN 'laplace' THEN eval.laplace_cdf(actual, mus[j], sds[j] / sqrt(2))
                ELSE eval_t_cdf((actual - mus[j]) / sds[j], df)
            END)) AS u_mix
    FROM mix
),
mix_scored AS (
    SELECT
        submission_id, origin_q, item_id, horizon, y,
        point - actual AS r,
        CASE WHEN has_sigma THEN
            ln(k) - (list_max(lp) + ln(list_sum(list_transform(lp, lambda v: exp(v - list_max(lp))))))
        END AS nll,
        CASE WHEN has_sigma THEN CASE family
            WHEN 'gaussian' THEN
                list_avg(list_transform(range(1, k + 1), lambda j:
                    eval.gauss_abs(actual - mus[j], sds[j])))
                - 0.5 * list_avg(list_transform(range(0, k * k), lambda i:
                    eval.gauss_abs(mus[i // k + 1] - mus[i % k + 1],
                                   sqrt(sds[i // k + 1] * sds[i // k + 1] + sds[i % k + 1] * sds[i % k + 1]))))
            WHEN 'laplace' THEN
                list_avg(list_transform(range(1, k + 1), lambda j:
                    abs(actual - mus[j])
                    + sds[j] / sqrt(2) * exp(-abs(actual - mus[j]) / (sds[j] / sqrt(2)))))
                - 0.5 * list_avg(list_transform(range(0, k * k), lambda i:
                    eval.laplace_pair(mus[i // k + 1] - mus[i % k + 1],
                                      sds[i // k + 1] / sqrt(2), sds[i % k + 1] / sqrt(2))))
        END END AS crps,
        CASE WHEN has_sigma THEN (point - actual) / s_mm END AS z,
        CASE WHEN has_sigma THEN u_mix END AS u
    FROM mix_parts
)
SELECT * FROM mix_scored;

CREATE OR REPLACE TEMP VIEW cell_scores AS
SELECT * FROM cell_scores_single
UNION ALL
SELECT * FROM cell_scores_mixture;
