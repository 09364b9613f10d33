-- The temp view quantile_cell_terms: per-cell scores of ONE quantile submission (its grid
-- getvariable('quantile_levels') tau_1 < ... < tau_K, component k holding the quantile
-- q_(k+1)) over {{ cells }}, a relation of (cell, actual, component, mu): the
-- submission's eval.forecasts rows met with the truth (049's view, for 050's insert) or a
-- round's resolved cells (sql/rounds/040's view, for its insert). Cells with every level
-- present and finite are scored. The forecast distribution is the piecewise-linear
-- quantile function through (tau_k, q_k) with flat tails beyond the outer levels (point
-- masses tau_1 at q_1 and 1 - tau_K at q_K):
--   CRPS = 2 * integral over tau of the pinball loss, exact piece by piece
--          (eval.qs_piece; a segment that crosses the actual is split there);
--   r    = mean - actual, mean = q_1 tau_1 + sum of trapezoids + q_K (1 - tau_K);
--   r_abs = median - actual (level getvariable('median_k'); NULL without level 0.5);
--   u    = F(actual), the distribution's CDF (0 below q_1, 1 from q_K on);
--   in{p}: q_lo <= actual <= q_hi for the levels (1 -+ p) / 2 of each coverage level p
--          (components getvariable('lo50'), ('hi50'), ...; NULL when the grid lacks
--          the pair; the levels are the metric registry's, filled into the slots).
-- No NLL and no z: a quantile forecast has no density.
CREATE OR REPLACE TEMP VIEW quantile_cell_terms AS
WITH levels AS (
    SELECT f.cell, CAST(f.actual AS DOUBLE) AS y, f.component AS k, f.mu AS q,
           getvariable('quantile_levels')[f.component + 1] AS tau
    FROM {{ cells }} f
),
segments AS (
    SELECT *, q - y AS g0, q_next - y AS g1
    FROM (
        SELECT *,
               lead(q) OVER (PARTITION BY cell ORDER BY k) AS q_next,
               lead(tau) OVER (PARTITION BY cell ORDER BY k) AS tau_next
        FROM levels
    )
),
terms AS (
    -- Each level's share of the integrals: its flat tail (first and last level) and the
    -- segment up to the next level.
    SELECT
        cell, y, k, q,
        CASE WHEN k = 0 THEN eval.qs_piece(0.0, tau, g0, g0, g0 > 0) ELSE 0 END
        + CASE WHEN k = getvariable('k_levels') - 1
               THEN eval.qs_piece(tau, 1.0, g0, g0, g0 > 0) ELSE 0 END
        + CASE WHEN q_next IS NULL THEN 0
               WHEN g0 >= 0 THEN eval.qs_piece(tau, tau_next, g0, g1, TRUE)
               WHEN g1 <= 0 THEN eval.qs_piece(tau, tau_next, g0, g1, FALSE)
               ELSE eval.qs_piece(tau, tau + (tau_next - tau) * (-g0 / (g1 - g0)), g0, 0.0, FALSE)
                    + eval.qs_piece(tau + (tau_next - tau) * (-g0 / (g1 - g0)), tau_next, 0.0, g1, TRUE)
          END AS pinball,
        CASE WHEN k = 0 THEN q * tau ELSE 0 END
        + CASE WHEN k = getvariable('k_levels') - 1 THEN q * (1 - tau) ELSE 0 END
        + CASE WHEN q_next IS NULL THEN 0 ELSE (tau_next - tau) * (q + q_next) / 2 END AS mass,
        CASE WHEN q <= y AND y < q_next
             THEN tau + (tau_next - tau) * (y - q) / (q_next - q) END AS u_inside
    FROM segments
),
per_cell AS (
    SELECT
        cell,
        any_value(y) AS y,
        2 * sum(pinball) AS crps,
        sum(mass) AS mean,
        any_value(q) FILTER (WHERE k = getvariable('median_k')) AS median,
        any_value(q) FILTER (WHERE k = 0) AS q_first,
        any_value(q) FILTER (WHERE k = getvariable('k_levels') - 1) AS q_last,
        max(u_inside) AS u_inside,
        {{ metric_quantile_bounds }}
    FROM terms
    GROUP BY cell
    HAVING count(*) = getvariable('k_levels') AND bool_and(isfinite(q))
)
SELECT
    cell,
    mean - y AS r,
    median - y AS r_abs,
    crps,
    CASE WHEN y < q_first THEN 0.0 WHEN y >= q_last THEN 1.0 ELSE u_inside END AS u,
    {{ metric_quantile_coverage }}
FROM per_cell;
