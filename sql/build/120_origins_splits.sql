-- Eligible origins, splits and purging: stage.param_lists, panel.splits and
-- panel.origins from stage.fq, panel.firms, panel.item_k and panel.origin_params.
-- stage.param_lists holds each quarter's parameters of items 1..78 as lists in item_id
-- order (k, mu, sigma; NULL where an item has no statistics at that quarter).
-- Every origin has a valid deflator. Beyond that (the rule origin_history):
-- 'firm_history': at least min_history quarters of the firm's scale-valid history
-- through it (pos >= min_history) and a calendar year in a split: train
-- [train_first_year, train_last_year], val (.. val_last_year], test (.. test_last_year].
-- 'panel_calendar' (the released package's tabular build): any scale-valid firm-quarter
-- from the panel's (min_history)th calendar quarter on (it drops the panel's first
-- min_history - 1 quarters globally, not per firm), with standardization statistics for
-- the scale at t and, for at least one item, statistics at t and a value reported at
-- one of t-3..t; train is every year through train_last_year.
-- Purging: an origin keeps only targets dated through its split's last quarter (train
-- 2001Q4, val 2009Q4; test through test_last_year's end or the panel's, the later).
CREATE OR REPLACE TABLE panel.splits AS
WITH panel_start AS (
    -- the (min_history)th quarter of the panel's calendar: quarters any firm spans
    SELECT q FROM (
        SELECT DISTINCT unnest(range(lo, hi + 1)) AS q
        FROM (SELECT min(q) AS lo, max(q) AS hi FROM stage.fq GROUP BY firm_id)
    )
    ORDER BY q LIMIT 1 OFFSET getvariable('min_history') - 1
)
SELECT * FROM (VALUES
    ('train',
     CASE WHEN getvariable('origin_history') = 'panel_calendar' THEN (SELECT q FROM panel_start)
          ELSE getvariable('train_first_year') * 4 END,
     getvariable('train_last_year') * 4 + 3),
    ('val', getvariable('train_last_year') * 4 + 4, getvariable('val_last_year') * 4 + 3),
    -- a panel grown past test_last_year (docs/rounds.md) keeps its new quarters in test
    ('test', getvariable('val_last_year') * 4 + 4,
     greatest(getvariable('test_last_year') * 4 + 3, (SELECT max(q) FROM stage.fq)))
) AS s(split, first_q, last_q);

CREATE OR REPLACE TABLE stage.param_lists AS
SELECT qs.q,
       list(k.k ORDER BY k.item_id) AS k,
       list(p.mu ORDER BY k.item_id) AS mu,
       list(p.sigma ORDER BY k.item_id) AS sigma
FROM (SELECT DISTINCT q FROM panel.origin_params) AS qs
CROSS JOIN panel.item_k AS k
LEFT JOIN panel.origin_params AS p ON p.q = qs.q AND p.item_id = k.item_id
WHERE k.item_id > 0
GROUP BY qs.q;

CREATE OR REPLACE TABLE panel.origins AS
WITH candidates AS (
    SELECT f.firm_id, f.q, f.z, f.pos
    FROM stage.fq AS f
    WHERE f.z IS NOT NULL
),
item_masks AS (
    -- the items a firm-quarter reports, as a bitmask over item ids 1..64 and 65..128
    -- (bit operations: an item-by-item join over four lags cost 30x more)
    SELECT firm_id, q,
           bit_or(CASE WHEN item_id <= 64 THEN 1::UBIGINT << (item_id - 1) ELSE 0::UBIGINT END) AS m0,
           bit_or(CASE WHEN item_id > 64 THEN 1::UBIGINT << (item_id - 65) ELSE 0::UBIGINT END) AS m1
    FROM panel.values
    WHERE item_id > 0 AND getvariable('origin_history') = 'panel_calendar'
    GROUP BY firm_id, q
),
stats_masks AS (
    -- the items with statistics at a quarter, the same way
    SELECT q,
           bit_or(CASE WHEN item_id <= 64 THEN 1::UBIGINT << (item_id - 1) ELSE 0::UBIGINT END) AS m0,
           bit_or(CASE WHEN item_id > 64 THEN 1::UBIGINT << (item_id - 65) ELSE 0::UBIGINT END) AS m1
    FROM panel.origin_params
    WHERE item_id > 0 AND getvariable('origin_history') = 'panel_calendar'
    GROUP BY q
),
recent AS (
    -- panel_calendar: some item has statistics at t and a value reported at one of t-3..t
    SELECT DISTINCT c.firm_id, c.q
    FROM candidates AS c
    CROSS JOIN range(0, 4) AS r(lag)
    JOIN item_masks AS f ON f.firm_id = c.firm_id AND f.q = c.q - r.lag
    JOIN stats_masks AS s ON s.q = c.q
    WHERE (f.m0 & s.m0) <> 0 OR (f.m1 & s.m1) <> 0
),
scale_params AS (
    SELECT q FROM panel.origin_params WHERE item_id = 0
)
SELECT c.firm_id, c.q AS origin_q, s.split, c.z, fi.ff48
FROM candidates AS c
JOIN panel.splits AS s ON c.q BETWEEN s.first_q AND s.last_q
JOIN panel.firms AS fi USING (firm_id)
LEFT JOIN recent AS r ON r.firm_id = c.firm_id AND r.q = c.q
LEFT JOIN scale_params AS sp ON sp.q = c.q
WHERE CASE getvariable('origin_history')
          WHEN 'panel_calendar' THEN r.firm_id IS NOT NULL AND sp.q IS NOT NULL
          WHEN 'firm_history' THEN c.pos >= getvariable('min_history') END
ORDER BY c.q, c.firm_id;
