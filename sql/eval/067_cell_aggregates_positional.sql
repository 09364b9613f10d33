-- run_agg rows (064) of ONE score-run submission kept in the upload store
-- (getvariable('submission_id'); a point or single-family density file), from 057's view
-- single_cell_terms over its cells on the run's common sample, met by position
-- (proforma.app.scoring.positional: the relation already carries each cell's truth, its
-- change y, its slot and its origin: getvariable('grid_slot_items') and
-- getvariable('grid_q0') turn them into item, horizon and origin quarter; nothing is joined): per (item,
-- horizon, origin quarter) every sum of the metric registry (the slot metric_cell_sums,
-- as 065 sums the same terms from eval.cell_density_scores; the per-group PIT columns are
-- 0) and, in run_pit, its 20 PIT bin counts, both from ONE pass over the cells (grouping
-- sets: the per-cell terms, the CDF's polynomial above all, are computed once; a second
-- query for the bins computed them again), and the headline sums per grid row (the
-- frame's `row`: a firm and origin quarter) for the bootstrap's clusters (run_clusters).
-- A single forecast's absolute track is its residual.
CREATE OR REPLACE TEMP TABLE positional_sums AS
SELECT
    grouping(c.sh, c.oq) = 0 AS by_group,
    grouping(c.row) = 0 AS by_row,
    c.sh,
    c.oq,
    c.pit_bin,
    c.row,
    {{ metric_cell_sums }}
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS);
-- (a cell with no u is in no bin: the slot metric_pit_bin)
FROM (SELECT *, r AS r_abs, {{ metric_pit_bin }} AS pit_bin
      FROM single_cell_terms) c
GROUP BY GROUPING SETS ((c.sh, c.oq), (c.pit_bin), (c.row));

INSERT INTO run_agg
SELECT
    getvariable('submission_id'),
    -- the grid's slot (item slot * 20 + horizon - 1) and origin offset as keys
    CAST(list_extract(getvariable('grid_slot_items'), sh // 20 + 1) AS SMALLINT),
    CAST(sh % 20 + 1 AS TINYINT),
    CAST(oq + getvariable('grid_q0') AS INTEGER),
    * EXCLUDE (by_group, by_row, sh, oq, pit_bin, row),
    {{ metric_pit_zeros }}
FROM positional_sums
WHERE by_group;

-- The headline sums per grid row, a (firm, origin quarter), into run_clusters (064)
INSERT INTO run_clusters
SELECT getvariable('submission_id'), g.firm_id, g.origin_q, {{ metric_cluster_names }}
FROM positional_sums p
JOIN eval.grid_rows g
  ON g.build_id = getvariable('grid_build_id') AND g.split = getvariable('grid_split')
 AND g.row = p.row
WHERE p.by_row;

-- Its PIT bin counts over the whole common sample (run_pit; the only reader, 070's PIT
-- histogram, is per submission).
INSERT INTO run_pit
SELECT getvariable('submission_id'), pit_bin, n
FROM positional_sums
WHERE NOT by_group AND NOT by_row AND pit_bin IS NOT NULL;

DROP TABLE positional_sums;
