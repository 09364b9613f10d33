-- run_agg rows (064) of the score run's submissions that are not point-only (temp table
-- agg_subs, point_only false: a sigma, a quantile grid or several components), from their
-- eval.cell_density_scores on the common sample (common_cells): per (submission, item,
-- horizon, origin quarter), every sum of the metric registry (contracts/metrics.py, the
-- slot metric_cell_sums: the point sums, each density term's sum and count over the cells
-- that have it, the absolute track over the cells with an absolute-track residual, a
-- quantile grid's median's, the residual r otherwise) and the 20 PIT bin counts as
-- columns (one hash aggregate with few groups). A cell without a PIT value (no usable
-- density) is in no bin.
INSERT INTO run_agg
SELECT
    c.submission_id, c.item_id, c.horizon, c.origin_q,
    {{ metric_cell_sums }},
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
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS): y the
-- truth's change, r_abs the absolute track's residual (a grid's median's, r otherwise).
-- least() skips NULLs: without the CASE a cell with no u would land in bin 19
FROM (SELECT c.* REPLACE (CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END AS r_abs),
             t.item_id, t.horizon, t.origin_q, t.change AS y,
             CASE WHEN c.u IS NOT NULL THEN CAST(least(floor(c.u * 20), 19) AS TINYINT) END AS pit_bin
      FROM eval.cell_density_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND NOT a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY c.submission_id, c.item_id, c.horizon, c.origin_q;
