-- k grid search: stage.lag_pool and panel.item_k from panel.values and stage.fq.
-- The lagged-ratio pool of item i at quarter q pools v_n / z_(n-4) and
-- v_(n-8) / z_(n-4), where n is the position at q in the firm's REPORTED series of
-- item i (reporting gaps collapse) and z_(n-4) the deflator at position n-4's quarter.
-- k_i is the point of a k_grid_n-point log grid over [k_lo, k_hi] whose asinh(k r) over
-- the pool's training quarters (q <= train_end_q) has bias-corrected excess kurtosis
-- closest to k_target_kurtosis; ties (equal up to 1e-9 relative: rounding) -> the
-- smallest k. The scale item (0) has its own
-- k on the contemporaneous deflators z (no lag pool, no self-deflation). A pool with no
-- defined kurtosis (fewer than 4 values or no spread) ties everywhere: smallest k.
-- Exact and fast: the objective is first screened at every grid point on the pool
-- binned by log|r| (bins of width k_bin_width times the item's spread of log|r|, each at
-- its members' mean r: every asinh(k r) moves by a small fraction of the pool's spread);
-- the grid points within
-- k_tolerance + 1% of (objective + target) of the screened minimum (at most
-- k_max_candidates, the best screened) are then evaluated exactly on the full pool
-- (moments about a shift at the binned mean) and the exact objective decides. Where the
-- objective is flat (more grid points within the screen's error than
-- k_max_candidates: the plateau of positive items at large k), the choice is exact among
-- the best screened points and within the screen's error of the optimum.
-- Rules (contracts/rules.py): the training window is quarters <= train_end_q (2001Q4),
-- or < train_end_q without k_window_includes_cutoff (the released package compares
-- quarter-end instants with midnight of 2001-12-31, which leaves 2001Q4 out); a pool
-- whose kurtosis is never defined gets k_undefined_kurtosis ('one': 1, the package's
-- default; 'smallest_grid_k'). An item (or the scale) with no training-period
-- observation at all: k_untrained 'whole_panel' searches its whole pool, every quarter
-- of the panel (the package's fall-back, which looks ahead); 'statement_median' takes
-- the median k of the items of its statement that have one (k = 1 if none). An item
-- without any pool (no firm reports it at positions n and n-4 with deflators):
-- k_without_pool 'one' (k = 1, recorded no_pool: the package skips it) or
-- 'statement_median'. panel.item_k.k_rule records which rule decided each k (window,
-- whole_panel, no_kurtosis, whole_panel_no_kurtosis, statement_median, no_pool,
-- unreported: no value at all, pinned); app/flows/build.py warns about every rule but
-- window, unreported and pinned.
-- With reg_stats pinned, k comes from the pinned statistics instead (stage.reg_stats_pinned).
CREATE OR REPLACE TABLE stage.lag_pool AS
WITH series AS (
    SELECT v.item_id, v.q, v.v, f.z,
           lag(f.z, 4) OVER w AS z4,
           lag(v.v, 8) OVER w AS v8
    FROM panel.values AS v
    JOIN stage.fq AS f USING (firm_id, q)
    WHERE v.item_id > 0 AND f.z IS NOT NULL
    WINDOW w AS (PARTITION BY v.firm_id, v.item_id ORDER BY v.q)
)
SELECT item_id, q, r
FROM (
    SELECT item_id, q, unnest([v / z4, v8 / z4]) AS r
    FROM series
    WHERE z4 IS NOT NULL
)
WHERE r IS NOT NULL;

CREATE OR REPLACE TEMP TABLE k_window_end AS
SELECT getvariable('train_end_q') - CASE WHEN getvariable('k_window_includes_cutoff') THEN 0 ELSE 1 END AS q;

-- Every pool over all quarters; `trained` marks the items with a training-period value.
CREATE OR REPLACE TEMP TABLE k_all AS
SELECT item_id, q, r FROM stage.lag_pool WHERE NOT getvariable('reg_stats_pinned')
UNION ALL
SELECT 0::SMALLINT AS item_id, q, z AS r FROM stage.fq
WHERE z IS NOT NULL AND NOT getvariable('reg_stats_pinned');

CREATE OR REPLACE TEMP TABLE k_reported AS
SELECT DISTINCT item_id FROM panel.values WHERE NOT getvariable('reg_stats_pinned');

CREATE OR REPLACE TEMP TABLE k_trained AS
SELECT DISTINCT item_id FROM k_all WHERE q <= (SELECT q FROM k_window_end);

-- The pool searched: the training window; with k_untrained 'whole_panel' the whole pool
-- of an item without a training-period value.
CREATE OR REPLACE TEMP TABLE k_pool AS
SELECT item_id, r FROM k_all
WHERE q <= (SELECT q FROM k_window_end)
   OR (getvariable('k_untrained') = 'whole_panel' AND item_id NOT IN (SELECT item_id FROM k_trained));

-- numpy.logspace(log10(lo), log10(hi), n): start + j * step, the last point exactly hi.
CREATE OR REPLACE TEMP TABLE k_grid AS
SELECT j::SMALLINT AS j,
       pow(10, CASE WHEN j = getvariable('k_grid_n') - 1 THEN log10(getvariable('k_hi'))
                    ELSE j * ((log10(getvariable('k_hi')) - log10(getvariable('k_lo')))
                              / (getvariable('k_grid_n') - 1)) + log10(getvariable('k_lo'))
               END) AS k
FROM range(getvariable('k_grid_n')) AS t(j);

-- Bins of log|r| scale with the item's spread of log|r|, so a narrow pool is not
-- collapsed into one bin: width = k_bin_width * stddev(log|r|) (k_bin_width if undefined).
CREATE OR REPLACE TEMP TABLE k_bins AS
WITH spread AS (
    SELECT item_id,
           coalesce(nullif(stddev_pop(ln(abs(r))) FILTER (WHERE r <> 0), 0), 1)
               * getvariable('k_bin_width') AS width
    FROM k_pool
    GROUP BY item_id
)
SELECT p.item_id, count(*) AS n, avg(p.r) AS r
FROM k_pool AS p JOIN spread AS s USING (item_id)
GROUP BY p.item_id, sign(p.r), CASE WHEN p.r <> 0 THEN round(ln(abs(p.r)) / s.width) END;

-- Bias-corrected excess kurtosis from n and the power sums s1..s4 of (a - c), a shift c
-- close to the mean (so the central moments lose no precision):
-- d = s1/n, m2 = s2/n - d^2, m4 = s4/n - 4 d s3/n + 6 d^2 s2/n - 3 d^4,
-- G2 = ((n + 1) (m4 / m2^2 - 3) + 6) (n - 1) / ((n - 2) (n - 3)).
CREATE OR REPLACE TEMP MACRO pf_excess_kurtosis(n, s1, s2, s3, s4) AS
    CASE WHEN n >= 4 AND s2 / n - pow(s1 / n, 2) > 0
         THEN ((n + 1) * ((s4 / n - 4 * (s1 / n) * (s3 / n) + 6 * pow(s1 / n, 2) * (s2 / n)
                           - 3 * pow(s1 / n, 4)) / pow(s2 / n - pow(s1 / n, 2), 2) - 3) + 6)
              * (n - 1) / ((n - 2) * (n - 3)) END;

-- Shift for the moments: asinh(k * r_med), r_med the (binned) median r of the item.
CREATE OR REPLACE TEMP TABLE k_center AS
SELECT item_id, arg_min(r, cum) AS r_med
FROM (
    SELECT item_id, r, sum(n) OVER (PARTITION BY item_id ORDER BY r) AS cum,
           sum(n) OVER (PARTITION BY item_id) AS total
    FROM k_bins
)
WHERE cum >= total / 2
GROUP BY item_id;

CREATE OR REPLACE TEMP TABLE k_binned AS
WITH med AS (
    SELECT * FROM k_center
),
t AS (
    SELECT b.item_id, g.j, b.n, asinh(g.k * b.r) - asinh(g.k * m.r_med) AS a
    FROM k_bins AS b JOIN med AS m USING (item_id), k_grid AS g
)
SELECT item_id, j,
       sum(n) AS n, sum(n * a) / sum(n) AS mean_shifted,
       abs(pf_excess_kurtosis(sum(n), sum(n * a), sum(n * a * a), sum(n * a * a * a),
                              sum(n * a * a * a * a)) - getvariable('k_target_kurtosis')) AS obj
FROM t
GROUP BY item_id, j;

CREATE OR REPLACE TEMP TABLE k_candidates AS
WITH best AS (
    SELECT item_id, min(obj) AS obj FROM k_binned GROUP BY item_id
),
near AS (
    -- Within the screen's error of the binned minimum; at most k_max_candidates of them
    -- (the best screened), so a flat objective does not multiply the exact pass.
    SELECT item_id, j
    FROM (
        SELECT b.item_id, b.j,
               row_number() OVER (
                   PARTITION BY b.item_id
                   -- screened ties (equal up to rounding) first, in grid order
                   ORDER BY CASE WHEN b.obj <= m.obj + 1e-9 * (1 + m.obj) THEN -1 ELSE b.obj END, b.j
               ) AS rank
        FROM k_binned AS b JOIN best AS m USING (item_id)
        WHERE b.obj <= m.obj + getvariable('k_tolerance')
                         + 0.01 * (m.obj + abs(getvariable('k_target_kurtosis')))
    )
    WHERE rank <= getvariable('k_max_candidates')
),
med AS (
    SELECT * FROM k_center
)
SELECT n.item_id, g.j, g.k,
       -- the exact pass's shift: the binned mean of asinh(k r), within the binning error
       asinh(g.k * md.r_med) + kb.mean_shifted AS c
FROM near AS n
JOIN med AS md USING (item_id)
JOIN k_grid AS g ON g.j = n.j
JOIN k_binned AS kb ON kb.item_id = n.item_id AND kb.j = g.j;

CREATE OR REPLACE TEMP TABLE k_exact AS
WITH t AS (
    SELECT c.item_id, c.j, asinh(c.k * p.r) - c.c AS a
    FROM k_pool AS p JOIN k_candidates AS c USING (item_id)
)
SELECT item_id, j, count(*) AS n,
       abs(pf_excess_kurtosis(count(*), sum(a), sum(a * a), sum(a * a * a), sum(a * a * a * a))
           - getvariable('k_target_kurtosis')) AS obj
FROM t
GROUP BY item_id, j;

CREATE OR REPLACE TABLE panel.item_k AS
WITH best AS (
    SELECT item_id, min(obj) AS obj FROM k_exact GROUP BY item_id
),
chosen AS (
    -- Ties: objectives equal up to floating rounding (1e-9 relative) count as equal.
    SELECT e.item_id,
           coalesce(min(e.j) FILTER (WHERE e.obj <= b.obj + 1e-9 * (1 + b.obj)), min(e.j)) AS j,
           max(e.n) AS n_pool,
           min(e.obj) AS objective,
           count(*) AS n_exact
    FROM k_exact AS e JOIN best AS b USING (item_id)
    GROUP BY e.item_id
),
searched AS (
    -- items with a pool searched: the grid point chosen, or k_undefined_kurtosis's k
    SELECT it.item_id, it.statement,
           coalesce(g.k, CASE getvariable('k_undefined_kurtosis')
                              WHEN 'one' THEN 1.0
                              WHEN 'smallest_grid_k' THEN (SELECT k FROM k_grid WHERE j = 0)
                          END) AS k,
           c.n_pool, c.objective, c.n_exact,
           it.item_id IN (SELECT item_id FROM k_trained) AS trained
    FROM ref.items AS it
    LEFT JOIN chosen AS c USING (item_id)
    LEFT JOIN k_grid AS g USING (j)
    WHERE it.item_id IN (SELECT item_id FROM k_pool)
),
statement_k AS (
    SELECT statement, median(k) AS k
    FROM searched
    WHERE objective IS NOT NULL AND item_id > 0 AND trained
    GROUP BY statement
)
SELECT it.item_id,
       -- not searched: an item with a pool but no training-period value (k_untrained
       -- 'statement_median'), or without any pool (k_without_pool)
       CASE WHEN s.item_id IS NOT NULL THEN s.k
            WHEN it.item_id NOT IN (SELECT item_id FROM k_all)
                 AND getvariable('k_without_pool') = 'one' THEN 1.0
            ELSE coalesce(sk.k, 1.0) END AS k,
       coalesce(s.n_pool, 0)::BIGINT AS n_pool,
       s.objective,
       coalesce(s.n_exact, 0)::INTEGER AS n_exact,
       CASE WHEN s.item_id IS NULL AND it.item_id NOT IN (SELECT item_id FROM k_reported)
                THEN 'unreported'
            WHEN s.item_id IS NULL AND it.item_id NOT IN (SELECT item_id FROM k_all)
                 AND getvariable('k_without_pool') = 'one' THEN 'no_pool'
            WHEN s.item_id IS NULL THEN 'statement_median'
            WHEN s.trained AND s.objective IS NOT NULL THEN 'window'
            WHEN s.trained THEN 'no_kurtosis'
            WHEN s.objective IS NOT NULL THEN 'whole_panel'
            ELSE 'whole_panel_no_kurtosis' END AS k_rule
FROM ref.items AS it
LEFT JOIN searched AS s USING (item_id)
LEFT JOIN statement_k AS sk ON sk.statement = it.statement
WHERE NOT getvariable('reg_stats_pinned')
UNION ALL
SELECT item_id, any_value(k), NULL, NULL, NULL, 'pinned'
FROM stage.reg_stats_pinned
WHERE getvariable('reg_stats_pinned')
GROUP BY item_id
ORDER BY item_id;

DROP TABLE k_window_end; DROP TABLE k_all; DROP TABLE k_reported; DROP TABLE k_trained; DROP TABLE k_pool; DROP TABLE k_bins; DROP TABLE k_center; DROP TABLE k_binned; DROP TABLE k_candidates; DROP TABLE k_exact;
DROP TABLE k_grid; DROP MACRO pf_excess_kurtosis;
