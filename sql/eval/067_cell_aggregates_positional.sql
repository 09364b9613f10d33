-- run_agg rows (064) of ONE score-run submission kept in the upload store
-- (getvariable('submission_id'); a point or single-family density file), from 057's view
-- single_cell_terms over its cells on the run's common sample, met by position
-- (proforma.app.scoring.positional: the relation already carries each cell's truth, its
-- change y, its slot and its origin: getvariable('grid_slot_items') and
-- getvariable('grid_q0') turn them into item, horizon and origin quarter; nothing is joined): per (item,
-- horizon, origin quarter) every sum of the metric registry (the slot metric_cell_sums,
-- as 065 sums the same terms from eval.cell_density_scores; the per-group PIT columns are
-- 0) and, in run_pit, its 20 PIT bin counts. A single forecast's absolute track is its
-- residual.
INSERT INTO run_agg
SELECT
    getvariable('submission_id'),
    -- the grid's slot (item slot * 20 + horizon - 1) and origin offset as keys
    CAST(list_extract(getvariable('grid_slot_items'), c.sh // 20 + 1) AS SMALLINT),
    CAST(c.sh % 20 + 1 AS TINYINT),
    CAST(c.oq + getvariable('grid_q0') AS INTEGER),
    {{ metric_cell_sums }},
    0::BIGINT AS pit0,
    0::BIGINT AS pit1,
    0::BIGINT AS pit2,
    0::BIGINT AS pit3,
    0::BIGINT AS pit4,
    0::BIGINT AS pit5,
    0::BIGINT AS pit6,
    0::BIGINT AS pit7,
    0::BIGINT AS pit8,
    0::BIGINT AS pit9,
    0::BIGINT AS pit10,
    0::BIGINT AS pit11,
    0::BIGINT AS pit12,
    0::BIGINT AS pit13,
    0::BIGINT AS pit14,
    0::BIGINT AS pit15,
    0::BIGINT AS pit16,
    0::BIGINT AS pit17,
    0::BIGINT AS pit18,
    0::BIGINT AS pit19
-- Each cell's inputs under the registry's names (contracts/metrics.py CELL_INPUTS).
FROM (SELECT *, r AS r_abs FROM single_cell_terms) c
GROUP BY c.sh, c.oq;

-- Its PIT bin counts over the whole common sample (run_pit; the only reader, 070's PIT
-- histogram, is per submission), one small aggregate instead of 20 filtered counts per
-- group. least() skips NULLs: a cell with no u is in no bin.
INSERT INTO run_pit
SELECT getvariable('submission_id'), pit_bin, count(*)
FROM (SELECT CAST(least(floor(u * 20), 19) AS TINYINT) AS pit_bin
      FROM single_cell_terms
      WHERE u IS NOT NULL)
GROUP BY pit_bin;
