-- run_agg rows (064) of the score run's submissions that are not point-only (temp table
-- agg_subs, point_only false: a sigma, a quantile forecast or several components), from their
-- eval.cell_density_scores on the common sample (common_cells): per (submission, item,
-- horizon, origin quarter), every sum of the metric registry (contracts/metrics.py, the
-- slot metric_cell_sums: the point sums, each density term's sum and count over the cells
-- that have it, the absolute track over the cells with an absolute-track residual, a
-- quantile forecast's median's, the residual r otherwise) and the 20 PIT bin counts as
-- columns (one hash aggregate with few groups). A cell without a PIT value (no usable
-- density) is in no bin.
INSERT INTO run_agg
SELECT
    c.submission_id, c.item_id, c.horizon, c.origin_q,
    {{ metric_cell_sums }},
    {{ metric_pit_counts }}
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS): y the
-- truth's change, r_abs the absolute track's residual (a grid's median's, r otherwise).
-- (a cell with no u is in no bin: the slot metric_pit_bin)
FROM (SELECT c.* REPLACE (CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END AS r_abs),
             t.item_id, t.horizon, t.origin_q, t.change AS y,
             {{ metric_pit_bin }} AS pit_bin
      FROM eval.cell_density_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND NOT a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY c.submission_id, c.item_id, c.horizon, c.origin_q;

-- run_clusters rows (064): the headline sums per (submission, firm, origin quarter)
INSERT INTO run_clusters
SELECT c.submission_id, c.firm_id, c.origin_q, {{ metric_cluster_sums }}
FROM (SELECT c.* REPLACE (CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END AS r_abs),
             t.firm_id, t.origin_q, t.change AS y
      FROM eval.cell_density_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND NOT a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY c.submission_id, c.firm_id, c.origin_q;
