-- k grid search: stage.lag_pool and panel.item_k from panel.values and stage.fq.
-- The lagged-ratio pool of item i at quarter q pools v_n / z_(n-4) and
-- v_(n-8) / z_(n-4), where n is the position at q in the firm's REPORTED series of
-- item i (reporting gaps collapse) and z_(n-4) the deflator at position n-4's quarter.
-- k_i is the point of a k_grid_n-point log grid over [k_lo, k_hi] whose asinh(k r) over
-- the pool's training quarters (q <= train_end_q) has bias-corrected excess kurtosis
-- closest to k_target_kurtosis; ties -> the smallest k. The scale item (0) has its own
-- k on the contemporaneous deflators z (no lag pool, no self-deflation). A pool with no
-- defined kurtosis (fewer than 4 values or no spread) ties everywhere: smallest k.
-- Exact and fast: the objective is first evaluated at every grid point on the pool
-- binned by log|r| (bins of width k_bin_width, each at its members' mean r), which moves
-- every asinh(k r) by a relative error below k_bin_width / 2; every grid point within
-- k_tolerance (plus 5% of the objective) of the binned minimum, and its two neighbours,
-- is then evaluated exactly on the full pool with two-pass (centered) moments.
-- With reg_stats pinned, k comes from the pinned statistics instead (stage.reg_stats_pinned).
CREATE OR REPLACE TABLE stage.lag_pool AS
WITH series AS (
    SELECT v.item_id, v.q, v.v, f.z,
           lag(f.z, 4) OVER w AS z4,
           lag(v.v, 8) OVER w AS v8
    FROM panel.values AS v
    JOIN stage.fq AS f USING (firm_id, q)
    WHERE v.item_id > 0
    WINDOW w AS (PARTITION BY v.firm_id, v.item_id ORDER BY v.q)
)
SELECT item_id, q, r
FROM (
    SELECT item_id, q, unnest([v / z4, v8 / z4]) AS r
    FROM series
    WHERE z4 IS NOT NULL
)
WHERE r IS NOT NULL;

CREATE OR REPLACE TEMP TABLE k_pool AS
SELECT item_id, r FROM stage.lag_pool
WHERE q <= getvariable('train_end_q') AND NOT getvariable('reg_stats_pinned')
UNION ALL
SELECT 0::SMALLINT AS item_id, z AS r FROM stage.fq
WHERE q <= getvariable('train_end_q') AND NOT getvariable('reg_stats_pinned');

-- numpy.logspace(log10(lo), log10(hi), n): start + j * step, the last point exactly hi.
CREATE OR REPLACE TEMP TABLE k_grid AS
SELECT j::SMALLINT AS j,
       pow(10, CASE WHEN j = getvariable('k_grid_n') - 1 THEN log10(getvariable('k_hi'))
                    ELSE j * ((log10(getvariable('k_hi')) - log10(getvariable('k_lo')))
                              / (getvariable('k_grid_n') - 1)) + log10(getvariable('k_lo'))
               END) AS k
FROM range(getvariable('k_grid_n')) AS t(j);

CREATE OR REPLACE TEMP TABLE k_bins AS
SELECT item_id, count(*) AS n, avg(r) AS r
FROM k_pool
GROUP BY item_id, sign(r), CASE WHEN r <> 0 THEN round(ln(abs(r)) / getvariable('k_bin_width')) END;

-- Bias-corrected excess kurtosis from n, m2, m4 (central moments over n):
-- G2 = ((n + 1) (m4 / m2^2 - 3) + 6) (n - 1) / ((n - 2) (n - 3)).
CREATE OR REPLACE TEMP MACRO pf_excess_kurtosis(n, m2, m4) AS
    CASE WHEN n >= 4 AND m2 > 0
         THEN ((n + 1) * (m4 / (m2 * m2) - 3) + 6) * (n - 1) / ((n - 2) * (n - 3)) END;

CREATE OR REPLACE TEMP TABLE k_binned AS
WITH t AS (
    SELECT b.item_id, g.j, b.n, asinh(g.k * b.r) AS a FROM k_bins AS b, k_grid AS g
),
m AS (
    SELECT item_id, j, sum(n * a) / sum(n) AS mean FROM t GROUP BY item_id, j
),
c AS (
    SELECT t.item_id, t.j, sum(t.n) AS n,
           sum(t.n * pow(t.a - m.mean, 2)) / sum(t.n) AS m2,
           sum(t.n * pow(t.a - m.mean, 4)) / sum(t.n) AS m4
    FROM t JOIN m USING (item_id, j)
    GROUP BY t.item_id, t.j
)
SELECT item_id, j, abs(pf_excess_kurtosis(n, m2, m4) - getvariable('k_target_kurtosis')) AS obj
FROM c;

CREATE OR REPLACE TEMP TABLE k_candidates AS
WITH best AS (
    SELECT item_id, min(obj) AS obj FROM k_binned GROUP BY item_id
),
near AS (
    SELECT b.item_id, b.j
    FROM k_binned AS b JOIN best AS m USING (item_id)
    WHERE b.obj <= m.obj * 1.05 + getvariable('k_tolerance')
)
SELECT DISTINCT n.item_id, g.j, g.k
FROM near AS n, k_grid AS g
WHERE g.j BETWEEN n.j - 1 AND n.j + 1;

CREATE OR REPLACE TEMP TABLE k_exact AS
WITH t AS (
    SELECT c.item_id, c.j, asinh(c.k * p.r) AS a
    FROM k_pool AS p JOIN k_candidates AS c USING (item_id)
),
m AS (
    SELECT item_id, j, avg(a) AS mean FROM t GROUP BY item_id, j
),
c AS (
    SELECT t.item_id, t.j, count(*) AS n,
           avg(pow(t.a - m.mean, 2)) AS m2, avg(pow(t.a - m.mean, 4)) AS m4
    FROM t JOIN m USING (item_id, j)
    GROUP BY t.item_id, t.j
)
SELECT item_id, j, n, abs(pf_excess_kurtosis(n, m2, m4) - getvariable('k_target_kurtosis')) AS obj
FROM c;

CREATE OR REPLACE TABLE panel.item_k AS
WITH chosen AS (
    SELECT item_id,
           coalesce(arg_min(j, (obj, j)) FILTER (WHERE obj IS NOT NULL), min(j)) AS j,
           max(n) AS n_pool,
           min(obj) AS objective,
           count(*) AS n_exact
    FROM k_exact
    GROUP BY item_id
)
SELECT it.item_id,
       coalesce(g.k, (SELECT k FROM k_grid WHERE j = 0)) AS k,
       coalesce(c.n_pool, 0)::BIGINT AS n_pool,
       c.objective,
       coalesce(c.n_exact, 0)::INTEGER AS n_exact
FROM ref.items AS it
LEFT JOIN chosen AS c USING (item_id)
LEFT JOIN k_grid AS g USING (j)
WHERE NOT getvariable('reg_stats_pinned')
UNION ALL
SELECT item_id, any_value(k), NULL, NULL, NULL
FROM stage.reg_stats_pinned
WHERE getvariable('reg_stats_pinned')
GROUP BY item_id
ORDER BY item_id;

DROP TABLE k_pool; DROP TABLE k_bins; DROP TABLE k_binned; DROP TABLE k_candidates; DROP TABLE k_exact;
DROP TABLE k_grid; DROP MACRO pf_excess_kurtosis;
