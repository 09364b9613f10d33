-- The temp views of ONE mixture submission's per-cell scores (K > 1 components; its
-- family, df and has_sigma in getvariable('family'), ('df'), ('has_sigma')) over
-- {{ cells }}, a relation of (cell, actual, component, mu, sigma): the submission's
-- eval.forecasts rows met with the truth (049's view, for 050's insert) or a round's
-- resolved cells (sql/rounds/040's view, for its insert). The components form an exact
-- equal-weight mixture: point = mean mu_k, moment-matched sigma =
-- sqrt(mean sigma_k^2 + var mu_k) for z, NLL via logsumexp, the closed-form mixture CRPS
-- of the families that have one, u = mean_k F_k(actual) and the central-interval flags
-- from u. A cell is scored when every component's mu is finite and, if
-- getvariable('sigma_in_sample') (the paper's rules), every sigma is finite and > 0;
-- otherwise (published) a cell with an unusable sigma keeps its point scores only.
-- Sigma is floored at getvariable('sigma_floor') when set.
-- * mixture_components: one row per component with its terms (numbers only). What
--   differs by family (each component's log density, CDF and CRPS terms over
--   w = (actual - mu) / s and aw = |w|) is the family registry's
--   (proforma.contracts.families), filled into the family slots when the step is read
--   (proforma.app.store.family_sql). Stages compute each argument once (the CDF macros
--   repeat their argument ~20 times).
-- * mixture_cell_terms: any K, by a pair self-join and a per-cell aggregate.
-- * mixture_pair_cell_terms: K = 2 only (the two components getvariable('first_component')
--   and any other), the same scores from one join of the two components' rows, with no
--   per-cell aggregate: 2.8x faster than mixture_cell_terms on a two-seed FFNN of the demo
--   (10M cells, 4.6 s against 13 s), equal to it (tests/eval/test_mixture_pairs.py).
-- Row-wise, no list lambdas that capture lists: DuckDB evaluates those per element,
-- which made mixtures cost minutes per million cells.
CREATE OR REPLACE TEMP VIEW mixture_components AS
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
{{ family_mixture_helpers }},
comp_terms AS NOT MATERIALIZED (
    -- Per component: log density lp, CDF F_k(actual), the first CRPS term E|X_k - y| and
    -- the diagonal pair term E|X_k - X_k'| of two independent copies.
    SELECT
        cell, actual, component, mu, s, ok, sigma_ok,
        {{ family_mixture_log_density }} AS lp,
        {{ family_mixture_cdf }} AS cdf,
        {{ family_mixture_crps_first }} AS t1,
        {{ family_mixture_crps_diagonal }} AS diagonal
    FROM comp_t
)
SELECT * FROM comp_terms;

CREATE OR REPLACE TEMP VIEW mixture_cell_terms AS
-- Only comp_terms is materialized (it feeds the pair join, the per-cell aggregate and the
-- tail fix), holding numbers only.
WITH comp_terms AS MATERIALIZED (SELECT * FROM mixture_components),
pairs AS (
    -- The sum over unordered pairs a < b of E|X_a - X_b| in each cell (K (K - 1) / 2
    -- join rows: one for K = 2, a quarter of the K^2 ordered pairs).
    SELECT cell, sum({{ family_mixture_crps_pair }}) AS off_diagonal
    FROM (
        SELECT a.cell,
               a.mu - b.mu AS dm, a.s AS sa, b.s AS sb, sqrt(a.s * a.s + b.s * b.s) AS sp,
               abs(a.mu - b.mu) / sqrt(a.s * a.s + b.s * b.s) AS ap
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
        CASE WHEN m.has_density AND {{ family_mixture_has_crps }}
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

CREATE OR REPLACE TEMP VIEW mixture_pair_cell_terms AS
WITH paired AS (
    -- The two components of a cell side by side (a cell may have one of them only); a
    -- cell with a component that is not ok is left out, as the HAVING of per_cell above.
    SELECT coalesce(a.cell, b.cell) AS cell, coalesce(a.actual, b.actual) AS actual,
           (a.cell IS NOT NULL)::INTEGER + (b.cell IS NOT NULL)::INTEGER AS k,
           a.mu AS mu_a, b.mu AS mu_b, a.s AS sa, b.s AS sb, a.lp AS lp_a, b.lp AS lp_b,
           a.cdf AS cdf_a, b.cdf AS cdf_b, a.t1 AS t1_a, b.t1 AS t1_b,
           a.diagonal AS diagonal_a, b.diagonal AS diagonal_b,
           coalesce(a.sigma_ok, TRUE) AND coalesce(b.sigma_ok, TRUE) AS sigma_ok
    FROM (SELECT * FROM mixture_components
          WHERE component = getvariable('first_component')) a
    FULL JOIN (SELECT * FROM mixture_components
               WHERE component <> getvariable('first_component')) b
      ON b.cell = a.cell
    WHERE coalesce(a.ok, TRUE) AND coalesce(b.ok, TRUE)
),
per_cell AS (
    -- per_cell of mixture_cell_terms for K <= 2, and the pair's terms (a the first
    -- component, b the other, as the self-join there pairs them)
    SELECT
        cell, actual, k,
        CASE k WHEN 2 THEN (mu_a + mu_b) / 2 ELSE coalesce(mu_a, mu_b) END AS point,
        CASE k WHEN 2 THEN sqrt((sa * sa + sb * sb) / 2 + ((mu_a - mu_b) / 2) ** 2)
               ELSE coalesce(sa, sb) END AS s_mm,
        CASE k WHEN 2 THEN exp(lp_a) + exp(lp_b) ELSE exp(coalesce(lp_a, lp_b)) END AS density_sum,
        greatest(lp_a, lp_b) AS lp_max,
        least(lp_a, lp_b) AS lp_min,
        CASE k WHEN 2 THEN (cdf_a + cdf_b) / 2 ELSE coalesce(cdf_a, cdf_b) END AS u_mix,
        CASE k WHEN 2 THEN (t1_a + t1_b) / 2 ELSE coalesce(t1_a, t1_b) END AS t1,
        CASE k WHEN 2 THEN diagonal_a + diagonal_b ELSE coalesce(diagonal_a, diagonal_b) END AS diagonal,
        getvariable('has_sigma') AND sigma_ok AS has_density,
        mu_a - mu_b AS dm, sa, sb,
        sqrt(sa * sa + sb * sb) AS sp,
        abs(mu_a - mu_b) / sqrt(sa * sa + sb * sb) AS ap
    FROM paired
),
mix_scored AS (
    SELECT
        m.cell,
        m.point - m.actual AS r,
        -- log(exp(lp_a) + exp(lp_b)) relative to the larger where the direct sum under-
        -- or overflows (tail_fix above)
        CASE WHEN m.has_density THEN ln(m.k) - CASE
            WHEN m.density_sum BETWEEN 1e-290 AND 1e290 THEN ln(m.density_sum)
            WHEN m.k = 1 THEN m.lp_max
            ELSE m.lp_max + ln(1 + exp(m.lp_min - m.lp_max)) END END AS nll,
        CASE WHEN m.has_density AND {{ family_mixture_has_crps }}
             THEN m.t1 - 0.5 * (m.diagonal + 2 * CASE WHEN m.k = 2 AND getvariable('has_sigma')
                                                      THEN {{ family_mixture_crps_pair }}
                                                      ELSE 0 END) / (m.k * m.k) END AS crps,
        CASE WHEN m.has_density THEN (m.point - m.actual) / m.s_mm END AS z,
        CASE WHEN m.has_density THEN m.u_mix END AS u
    FROM per_cell m
)
SELECT
    cell, r, nll, crps, z, u,
    {{ metric_coverage_flags }}
FROM mix_scored;
