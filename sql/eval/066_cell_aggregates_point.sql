-- run_agg rows (064) of the score run's point-only submissions (agg_subs, point_only: one
-- component, no sigma, not a quantile forecast), from their eval.cell_point_scores on the
-- common sample: they have no density terms, so only the registry's point sums are
-- aggregated and the density sums are constants (0 counts, NULL sums: the slot
-- metric_point_sums), at about half 065's cost (its density aggregates run over every
-- cell); and the headline sums per (submission, firm, origin quarter) for the
-- bootstrap's clusters (run_clusters). ONE pass over the cells and their join with the
-- common sample (grouping sets, as 065; docs/scoring.md, "Figures behind the code's
-- choices").
CREATE OR REPLACE TEMP TABLE point_sums AS
SELECT
    c.submission_id,
    grouping(c.item_id) = 0 AS by_group,
    c.item_id,
    c.horizon,
    c.origin_q,
    c.firm_id,
    {{ metric_point_sums }}
-- the cell inputs a point forecast has (contracts/metrics.py POINT_INPUTS)
FROM (SELECT c.submission_id, t.item_id, t.horizon, t.origin_q, t.firm_id,
             t.change AS y, c.r, c.r AS r_abs
      FROM eval.cell_point_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY GROUPING SETS ((c.submission_id, c.item_id, c.horizon, c.origin_q),
                        (c.submission_id, c.firm_id, c.origin_q));

INSERT INTO run_agg
SELECT
    submission_id, item_id, horizon, origin_q,
    * EXCLUDE (submission_id, by_group, item_id, horizon, origin_q, firm_id),
    {{ metric_pit_zeros }}
FROM point_sums
WHERE by_group;

-- run_clusters rows (064): the headline sums per (submission, firm, origin quarter)
INSERT INTO run_clusters
SELECT submission_id, firm_id, origin_q, {{ metric_cluster_names }}
FROM point_sums
WHERE NOT by_group;

DROP TABLE point_sums;
