-- run_agg rows (064) of the score run's submissions that are not point-only (temp table
-- agg_subs, point_only false: a sigma, a quantile forecast or several components), from their
-- eval.cell_density_scores on the common sample (common_cells): per (submission, item,
-- horizon, origin quarter), every sum of the metric registry (contracts/metrics.py, the
-- slot metric_cell_sums: the point sums, each density term's sum and count over the cells
-- that have it, the absolute track over the cells with an absolute-track residual, a
-- quantile forecast's median's, the residual r otherwise; the per-group PIT columns are
-- 0), the headline sums per (submission, firm, origin quarter) for the bootstrap's
-- clusters (run_clusters) and, in run_pit, each submission's 20 PIT bin counts (070's
-- histogram is per submission). ONE pass over the cells and their join with the common
-- sample (grouping sets, as 067): a query per target joined the 10M cells of a
-- submission again each time (docs/scoring.md, "Figures behind the code's choices").
-- A cell without a PIT value (no usable density) is in no bin.
CREATE OR REPLACE TEMP TABLE density_sums AS
SELECT
    c.submission_id,
    grouping(c.item_id) = 0 AS by_group,
    grouping(c.firm_id) = 0 AS by_firm,
    c.item_id,
    c.horizon,
    c.origin_q,
    c.firm_id,
    c.pit_bin,
    {{ metric_cell_sums }}
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS): y the
-- truth's change, r_abs the absolute track's residual (a grid's median's, r otherwise).
-- (a cell with no u is in no bin: the slot metric_pit_bin)
FROM (SELECT c.* REPLACE (CASE WHEN a.is_quantile THEN c.r_abs ELSE c.r END AS r_abs),
             t.item_id, t.horizon, t.origin_q, t.firm_id, t.change AS y,
             {{ metric_pit_bin }} AS pit_bin
      FROM eval.cell_density_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND NOT a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY GROUPING SETS ((c.submission_id, c.item_id, c.horizon, c.origin_q),
                        (c.submission_id, c.firm_id, c.origin_q),
                        (c.submission_id, c.pit_bin));

INSERT INTO run_agg
SELECT
    submission_id, item_id, horizon, origin_q,
    * EXCLUDE (submission_id, by_group, by_firm, item_id, horizon, origin_q, firm_id, pit_bin),
    {{ metric_pit_zeros }}
FROM density_sums
WHERE by_group;

-- run_clusters rows (064): the headline sums per (submission, firm, origin quarter)
INSERT INTO run_clusters
SELECT submission_id, firm_id, origin_q, {{ metric_cluster_names }}
FROM density_sums
WHERE by_firm;

INSERT INTO run_pit
SELECT submission_id, pit_bin, n
FROM density_sums
WHERE NOT by_group AND NOT by_firm AND pit_bin IS NOT NULL;

DROP TABLE density_sums;
