-- Sample waterfall (Table A1): one row per stage, from raw.fundq, the build's stage
-- views and tables (stage.fundq_linked, stage.fundq_nonfin, stage.fundq_dedup, stage.fq),
-- panel.splits, panel.origins, panel.truth_cells and panel.values. Rows 1-5 follow the
-- build's own order (link-window trim, financial exclusion, calendar-quarter
-- de-duplication, scale deflator); row 6 keeps the deflator-valid firm-quarters inside
-- the split window (train's first quarter to test's last); rows 7-9 partition row 6 by
-- the split of the quarter's calendar year. The view rows below count what the models
-- see: eligible origins (at least the minimum history, by split), the truth grid (cells,
-- test split), the tuple view's history tuples and target tuples per test origin
-- (history: every reported value at t-11..t, the scale token included), and the tabular
-- view's rows (one per eligible origin). Columns: step (order), stage, kind
-- ('filter', 'split' or 'view'), n.
WITH window_q AS (
    SELECT min(first_q) AS lo, max(last_q) AS hi FROM panel.splits
),
fq_split AS (
    SELECT s.split, count(*) AS n
    FROM stage.fq AS f JOIN panel.splits AS s ON f.q BETWEEN s.first_q AND s.last_q
    GROUP BY s.split
),
origins_split AS (
    SELECT split, count(*) AS n FROM panel.origins GROUP BY split
),
test_origins AS (
    SELECT o.firm_id, o.origin_q FROM panel.origins AS o WHERE o.split = 'test'
),
per_fq AS (
    SELECT firm_id, q, count(*) AS n FROM panel.values GROUP BY firm_id, q
),
history AS (
    SELECT count(*) AS origins, sum(h.n) AS tuples
    FROM test_origins AS o
    JOIN per_fq AS h ON h.firm_id = o.firm_id AND h.q BETWEEN o.origin_q - 11 AND o.origin_q
),
targets AS (
    SELECT count(*) AS cells
    FROM panel.truth_cells AS t
    JOIN panel.splits AS s ON s.split = 'test' AND t.origin_q BETWEEN s.first_q AND s.last_q
)
SELECT * FROM (VALUES
    (1, 'Raw Compustat quarterly rows', 'filter', (SELECT count(*) FROM raw.fundq)),
    (2, 'After the CRSP link-window trim', 'filter', (SELECT count(*) FROM stage.fundq_linked)),
    (3, 'After the financial-sector exclusion (SIC 6000-6999)', 'filter',
        (SELECT count(*) FROM stage.fundq_nonfin)),
    (4, 'Distinct firm-quarters (after de-duplication)', 'filter',
        (SELECT count(*) FROM stage.fundq_dedup)),
    (5, 'With a valid scale deflator', 'filter', (SELECT count(*) FROM stage.fq)),
    (6, 'Deflator-valid firm-quarters in the split window', 'filter',
        (SELECT count(*) FROM stage.fq, window_q WHERE q BETWEEN lo AND hi)),
    (7, 'Train', 'split', (SELECT coalesce(max(n), 0) FROM fq_split WHERE split = 'train')),
    (8, 'Validation', 'split', (SELECT coalesce(max(n), 0) FROM fq_split WHERE split = 'val')),
    (9, 'Test', 'split', (SELECT coalesce(max(n), 0) FROM fq_split WHERE split = 'test')),
    (10, 'Eligible origins, train', 'view',
        (SELECT coalesce(max(n), 0) FROM origins_split WHERE split = 'train')),
    (11, 'Eligible origins, validation', 'view',
        (SELECT coalesce(max(n), 0) FROM origins_split WHERE split = 'val')),
    (12, 'Eligible origins, test (tuple and tabular view rows)', 'view',
        (SELECT coalesce(max(n), 0) FROM origins_split WHERE split = 'test')),
    (13, 'Truth cells, test (target tuples)', 'view', (SELECT cells FROM targets)),
    (14, 'History tuples per test origin (mean)', 'view',
        (SELECT round(tuples / nullif(origins, 0))::BIGINT FROM history)),
    (15, 'Target tuples per test origin (mean)', 'view',
        (SELECT round(cells / nullif((SELECT count(*) FROM test_origins), 0))::BIGINT FROM targets))
) AS t(step, stage, kind, n)
ORDER BY step
