-- The origin blocks the reference baselines (090-092) are written in: consecutive origin
-- quarters of split getvariable('split'), a new block starting wherever the truth cells of
-- the quarters before it pass a multiple of getvariable('block_cells') (a quarter is never
-- divided, so a block holds at most one quarter more than that). Each block is one
-- statement, so the memory of a baseline's joins is bounded by the block, not the panel.
WITH per_q AS (
    SELECT origin_q, count(*) AS n
    FROM panel.truth
    WHERE split = getvariable('split')
    GROUP BY origin_q
),
running AS (
    SELECT origin_q, n,
           coalesce(sum(n) OVER (ORDER BY origin_q
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM per_q
)
SELECT min(origin_q) AS first_q, max(origin_q) AS last_q, CAST(sum(n) AS BIGINT) AS cells
FROM running
GROUP BY before // getvariable('block_cells')
ORDER BY first_q;
