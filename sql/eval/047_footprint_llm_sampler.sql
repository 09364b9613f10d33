-- The LLM protocol's origin sample (docs/llm.md "The sampler") into
-- eval.footprint_origins for footprint getvariable('footprint_id'), from panel.origins,
-- panel.values (the firm's scale-valid quarters), panel.truth and panel.firms.
-- Eligible: an origin of split getvariable('split') (a valid scale at q0) with at least
-- getvariable('min_history') scale-valid quarters of the firm through q0 and at least
-- one scoreable future cell. Each firm, in seeded hash order of its gvkey, takes ONE
-- block of consecutive eligible origins: its length drawn from the gvkey's seeded hash,
-- uniform on min_block..max_block and cut to the firm's longest run (a firm whose
-- longest run is shorter than min_block is skipped); its position, among those that fit
-- inside a run, the one whose quarters hold the fewest origins sampled so far (ties by
-- a seeded hash of gvkey and start), so origin quarters fill evenly across the window.
-- Firms are added until getvariable('n_origins') origins are drawn (the last block is
-- cut to reach it, never below min_block) or the firms run out. Everything is keyed by
-- gvkey, so the same seed draws the same sample from any build of the same panel. The
-- eligible pool is left in the temp table llm_pool (its size goes into the footprint's
-- definition).
CREATE OR REPLACE TEMP TABLE llm_pool AS
WITH
history AS (
    -- panel.values holds only scale-valid firm-quarters: number each firm's quarters
    SELECT firm_id, q, row_number() OVER (PARTITION BY firm_id ORDER BY q) AS pos
    FROM (SELECT DISTINCT firm_id, q FROM panel.values)
),
scoreable AS (
    SELECT DISTINCT firm_id, origin_q
    FROM panel.truth
    WHERE split = getvariable('split') AND isfinite(actual) AND isfinite(baseline)
),
pool AS (
    SELECT o.firm_id, f.gvkey, o.origin_q
    FROM panel.origins AS o
    JOIN history AS h
      ON h.firm_id = o.firm_id AND h.q = o.origin_q AND h.pos >= getvariable('min_history')
    JOIN scoreable AS s ON s.firm_id = o.firm_id AND s.origin_q = o.origin_q
    JOIN panel.firms AS f ON f.firm_id = o.firm_id
    WHERE o.split = getvariable('split')
)
SELECT * FROM pool;

INSERT INTO eval.footprint_origins (footprint_id, firm_id, origin_q, gvkey)
WITH RECURSIVE
window_q AS (
    -- the calendar to balance: the split's origin quarters
    SELECT min(origin_q) AS first_q, max(origin_q) AS last_q,
           max(origin_q) - min(origin_q) + 1 AS n_q
    FROM panel.origins
    WHERE split = getvariable('split')
),
runs AS (
    -- runs of consecutive eligible quarters (gaps and islands)
    SELECT firm_id, gvkey, min(origin_q) AS run_first, count(*)::INTEGER AS run_len
    FROM (SELECT *, origin_q - row_number() OVER (PARTITION BY firm_id ORDER BY origin_q)
                    AS island
          FROM llm_pool)
    GROUP BY firm_id, gvkey, island
),
firms AS (
    SELECT firm_id, gvkey,
           least(getvariable('min_block')
                 + (hash(gvkey, getvariable('seed'), 'length')
                    % (getvariable('max_block') - getvariable('min_block') + 1))::INTEGER,
                 max(run_len))::INTEGER AS block
    FROM runs
    GROUP BY firm_id, gvkey
    HAVING max(run_len) >= getvariable('min_block')
),
candidates AS (
    -- every start (offset from the window's first quarter) where the block fits a run
    SELECT row_number() OVER (ORDER BY hash(f.gvkey, getvariable('seed')), f.gvkey) AS turn,
           f.firm_id, f.gvkey, f.block,
           list(s.start - w.first_q ORDER BY s.start) AS starts
    FROM firms AS f
    JOIN runs AS r USING (firm_id)
    CROSS JOIN window_q AS w
    CROSS JOIN LATERAL (
        SELECT unnest(range(r.run_first, r.run_first + r.run_len - f.block + 1)) AS start) AS s
    WHERE r.run_len >= f.block
    GROUP BY f.firm_id, f.gvkey, f.block
),
greedy(turn, counts, total, firm_id, gvkey, start, block) AS (
    -- counts: origins drawn so far per quarter of the window
    SELECT 0::BIGINT, list_transform(range((SELECT n_q FROM window_q)), lambda i: 0::BIGINT),
           0::BIGINT, NULL::INTEGER, NULL::VARCHAR, NULL::BIGINT, NULL::BIGINT
    UNION ALL
    SELECT turn,
           list_transform(range(len(counts)),
                          lambda i: counts[i + 1] + (i >= start AND i < start + block)::BIGINT),
           total + block, firm_id, gvkey, start, block
    FROM (
        SELECT c.turn, g.counts, g.total, c.firm_id, c.gvkey, b.block,
               list_min(list_transform(c.starts, lambda s: {
                   'load': list_sum(g.counts[s + 1:s + b.block]),
                   'tie': hash(c.gvkey, s, getvariable('seed')),
                   'start': s})).start AS start
        FROM greedy AS g
        JOIN candidates AS c ON c.turn = g.turn + 1
        CROSS JOIN LATERAL (
            SELECT least(c.block, greatest(getvariable('min_block'),
                                           getvariable('n_origins') - g.total)) AS block) AS b
        WHERE g.total < getvariable('n_origins')
    )
)
SELECT getvariable('footprint_id'), g.firm_id, (w.first_q + g.start + k.k)::INTEGER, g.gvkey
FROM greedy AS g
CROSS JOIN window_q AS w
CROSS JOIN LATERAL (SELECT unnest(range(g.block)) AS k) AS k
WHERE g.turn > 0;
