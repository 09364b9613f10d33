-- run_agg rows (064) of the score run's point-only submissions (agg_subs, point_only: one
-- component, no sigma, not a quantile grid), from their eval.cell_point_scores on the
-- common sample: they have no density terms, so only the point sums are aggregated and the
-- density counts are constants. The rows 065 would give them, at about half its cost (its
-- thirty density aggregates run over every cell).
INSERT INTO run_agg
SELECT
    c.submission_id, t.item_id, t.horizon, t.origin_q,
    count(*) AS n,
    sum(t.change) AS sum_y,
    sum(t.change * t.change) AS sum_y2,
    sum(c.r * c.r) AS sse,
    count(c.r) AS n_abs,
    sum(abs(c.r)) AS sae,
    0::BIGINT AS n_density,
    0::BIGINT AS n_nll, NULL::DOUBLE AS sum_nll,
    0::BIGINT AS n_crps, NULL::DOUBLE AS sum_crps,
    0::BIGINT AS n_z, NULL::DOUBLE AS sum_z2,
    0::BIGINT AS n50, 0::BIGINT AS in50, 0::BIGINT AS n80, 0::BIGINT AS in80,
    0::BIGINT AS n90, 0::BIGINT AS in90, 0::BIGINT AS n95, 0::BIGINT AS in95,
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
FROM eval.cell_point_scores c
JOIN agg_subs a ON a.submission_id = c.submission_id AND a.point_only
JOIN common_cells t ON t.cell = c.cell
GROUP BY c.submission_id, t.item_id, t.horizon, t.origin_q;
