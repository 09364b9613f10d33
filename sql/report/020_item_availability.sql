-- Item dictionary with availability (Table A2): one row per benchmark item (ref.items
-- 1..78, alphabetical), from stage.fq_items, stage.fq, panel.values and panel.splits.
-- pct_raw = share of the build's de-duplicated, YTD-converted firm-quarters
-- (stage.fq_items: after the link-window trim and the financial exclusion, before the
-- scale filter) that report the item; pct_train / pct_val / pct_test = that share among
-- the scale-valid firm-quarters (stage.fq) whose quarter lies in each split. The
-- published package's percentages (ref.items.pct_*) come along for comparison.
WITH raw_counts AS (
    UNPIVOT (SELECT count(COLUMNS(* EXCLUDE (gvkey, q, sich))) FROM stage.fq_items)
    ON COLUMNS(*) INTO NAME item VALUE n
),
raw_total AS (SELECT count(*) AS n FROM stage.fq_items),
split_total AS (
    SELECT s.split, count(*) AS n
    FROM stage.fq AS f JOIN panel.splits AS s ON f.q BETWEEN s.first_q AND s.last_q
    GROUP BY s.split
),
split_counts AS (
    SELECT v.item_id, s.split, count(*) AS n
    FROM panel.values AS v JOIN panel.splits AS s ON v.q BETWEEN s.first_q AND s.last_q
    WHERE v.item_id > 0
    GROUP BY v.item_id, s.split
),
shares AS (
    SELECT c.item_id,
           100.0 * max(c.n) FILTER (WHERE c.split = 'train') / max(t.n) FILTER (WHERE t.split = 'train') AS pct_train,
           100.0 * max(c.n) FILTER (WHERE c.split = 'val') / max(t.n) FILTER (WHERE t.split = 'val') AS pct_val,
           100.0 * max(c.n) FILTER (WHERE c.split = 'test') / max(t.n) FILTER (WHERE t.split = 'test') AS pct_test
    FROM split_counts AS c JOIN split_total AS t USING (split)
    GROUP BY c.item_id
)
SELECT i.item, i.description, i.statement,
       100.0 * r.n / nullif((SELECT n FROM raw_total), 0) AS pct_raw,
       coalesce(s.pct_train, 0.0) AS pct_train,
       coalesce(s.pct_val, 0.0) AS pct_val,
       coalesce(s.pct_test, 0.0) AS pct_test,
       i.pct_raw AS published_pct_raw, i.pct_train AS published_pct_train,
       i.pct_val AS published_pct_val, i.pct_test AS published_pct_test
FROM ref.items AS i
LEFT JOIN raw_counts AS r ON r.item = i.item
LEFT JOIN shares AS s ON s.item_id = i.item_id
WHERE i.item_id > 0
ORDER BY i.item
