-- run_agg rows (064) of ONE score-run submission kept in the upload store as a point
-- file (getvariable('submission_id'); no sigma), from 057's view single_cell_terms over
-- its cells on the run's common sample, met by position (as 067): only the registry's
-- point sums are aggregated and the density sums are constants (the slot
-- metric_point_sums), the rows 067 would give at a fraction of its cost, as 066 does for
-- point forecasts in eval.cell_point_scores.
INSERT INTO run_agg
SELECT
    getvariable('submission_id'),
    -- the grid's slot (item slot * 20 + horizon - 1) and origin offset as keys
    CAST(list_extract(getvariable('grid_slot_items'), c.sh // 20 + 1) AS SMALLINT),
    CAST(c.sh % 20 + 1 AS TINYINT),
    CAST(c.oq + getvariable('grid_q0') AS INTEGER),
    {{ metric_point_sums }},
    {{ metric_pit_zeros }}
-- the cell inputs a point forecast has (contracts/metrics.py POINT_INPUTS)
FROM (SELECT sh, oq, y, r, r AS r_abs FROM single_cell_terms) c
GROUP BY c.sh, c.oq;

-- run_clusters rows (064): the headline sums per grid row (the frame's `row`: a firm and
-- origin quarter)
INSERT INTO run_clusters
SELECT getvariable('submission_id'), g.firm_id, g.origin_q, {{ metric_cluster_point_sums }}
FROM (SELECT row, y, r, r AS r_abs FROM single_cell_terms) c
JOIN eval.grid_rows g
  ON g.build_id = getvariable('grid_build_id') AND g.split = getvariable('grid_split')
 AND g.row = c.row
GROUP BY g.firm_id, g.origin_q;
