-- run_agg rows (064) of ONE score-run submission kept in the upload store
-- (getvariable('submission_id'); a point or single-family density file), from 057's view
-- single_cell_terms over its cells on the run's common sample, met by position
-- (proforma.app.scoring.positional: the relation already carries each cell's truth, its
-- change y and its item, horizon and origin quarter, so nothing is joined): per (item,
-- horizon, origin quarter) every sum of the metric registry (the slot metric_cell_sums,
-- as 065 sums the same terms from eval.cell_density_scores) and the 20 PIT bin counts. A
-- single forecast's absolute track is its residual.
INSERT INTO run_agg
SELECT
    getvariable('submission_id'), c.item_id, c.horizon, c.origin_q,
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
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS).
-- least() skips NULLs: without the CASE a cell with no u would land in bin 19
FROM (SELECT *, r AS r_abs,
             CASE WHEN u IS NOT NULL THEN CAST(least(floor(u * 20), 19) AS TINYINT) END AS pit_bin
      FROM single_cell_terms) c
GROUP BY c.item_id, c.horizon, c.origin_q;
