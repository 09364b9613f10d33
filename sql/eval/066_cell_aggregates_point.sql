-- run_agg rows (064) of the score run's point-only submissions (agg_subs, point_only: one
-- component, no sigma, not a quantile forecast), from their eval.cell_point_scores on the
-- common sample: they have no density terms, so only the registry's point sums are
-- aggregated and the density sums are constants (0 counts, NULL sums: the slot
-- metric_point_sums). The rows 065 would give them, at about half its cost (its
-- thirty density aggregates run over every cell).
INSERT INTO run_agg
SELECT
    c.submission_id, c.item_id, c.horizon, c.origin_q,
    {{ metric_point_sums }},
    {{ metric_pit_zeros }}
-- the cell inputs a point forecast has (contracts/metrics.py POINT_INPUTS)
FROM (SELECT c.submission_id, t.item_id, t.horizon, t.origin_q, t.change AS y, c.r,
             c.r AS r_abs
      FROM eval.cell_point_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY c.submission_id, c.item_id, c.horizon, c.origin_q;

-- run_clusters rows (064): the headline sums per (submission, firm, origin quarter)
INSERT INTO run_clusters
SELECT c.submission_id, c.firm_id, c.origin_q, {{ metric_cluster_point_sums }}
FROM (SELECT c.submission_id, t.firm_id, t.origin_q, t.change AS y, c.r, c.r AS r_abs
      FROM eval.cell_point_scores c
      JOIN agg_subs a ON a.submission_id = c.submission_id AND a.point_only
      JOIN common_cells t ON t.cell = c.cell) c
GROUP BY c.submission_id, c.firm_id, c.origin_q;
