-- run_agg rows (064) of the score run's submissions that are not point-only (temp table
-- agg_subs, point_only false: a sigma, a quantile grid or several components), from their
-- eval.cell_density_scores on the common sample (common_cells): per (submission, item, horizon, origin quarter), the point
-- sums, each density term's sum over the cells that have it (n_nll, n_crps, n_z, n50..),
-- the absolute track over the cells with an absolute-track residual (a quantile grid's
-- median; the residual r otherwise) and the 20 PIT bin counts as columns (one hash
-- aggregate with few groups). A cell without a PIT value (no usable density) is in no bin.
INSERT INTO run_agg
SELECT
    c.submission_id, t.item_id, t.horizon, t.origin_q,
    count(*) AS n,
    sum(t.change) AS sum_y,
    sum(t.change * t.change) AS sum_y2,
    sum(c.r * c.r) AS sse,
    count(CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END) AS n_abs,
    sum(abs(CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END)) AS sae,
    count(c.u) AS n_density,
    count(c.nll) AS n_nll,
    sum(c.nll) AS sum_nll,
    count(c.crps) AS n_crps,
    sum(c.crps) AS sum_crps,
    count(c.z) AS n_z,
    sum(c.z * c.z) AS sum_z2,
    count(c.in50) AS n50, count(*) FILTER (WHERE c.in50) AS in50,
    count(c.in80) AS n80, count(*) FILTER (WHERE c.in80) AS in80,
    count(c.in90) AS n90, count(*) FILTER (WHERE c.in90) AS in90,
    count(c.in95) AS n95, count(*) FILTER (WHERE c.in95) AS in95,
    count(*) FILTER (WHERE pit_bin = 0) AS pit0,
    count(*) FILTER (WHERE pit_bin = 1) AS pit1,
    count(*) FILTER (WHERE pit_bin = 2) AS pit2,
    count(*) FILTER (WHERE pit_bin = 3) AS pit3,
    count(*) FILTER (WHERE pit_bin = 4) AS pit4,
    count(*) FILTER (WHERE pit_bin = 5) AS pit5,
    count(*) FILTER (WHERE pit_bin = 6) AS pit6,
    count(*) FILTER (WHERE pit_bin = 7) AS pit7,
    count(*) FILTER (WHERE pit_bin = 8) AS pit8,
    count(*) FILTER (WHERE pit_bin = 9) AS pit9,
    count(*) FILTER (WHERE pit_bin = 10) AS pit10,
    count(*) FILTER (WHERE pit_bin = 11) AS pit11,
    count(*) FILTER (WHERE pit_bin = 12) AS pit12,
    count(*) FILTER (WHERE pit_bin = 13) AS pit13,
    count(*) FILTER (WHERE pit_bin = 14) AS pit14,
    count(*) FILTER (WHERE pit_bin = 15) AS pit15,
    count(*) FILTER (WHERE pit_bin = 16) AS pit16,
    count(*) FILTER (WHERE pit_bin = 17) AS pit17,
    count(*) FILTER (WHERE pit_bin = 18) AS pit18,
    count(*) FILTER (WHERE pit_bin = 19) AS pit19
-- least() skips NULLs: without the CASE a cell with no u would land in bin 19
FROM (SELECT *, CASE WHEN u IS NOT NULL THEN CAST(least(floor(u * 20), 19) AS TINYINT) END AS pit_bin
      FROM eval.cell_density_scores) c
JOIN agg_subs a ON a.submission_id = c.submission_id AND NOT a.point_only
JOIN common_cells t ON t.cell = c.cell
GROUP BY c.submission_id, t.item_id, t.horizon, t.origin_q;
