-- Eligible origins, splits and purging: panel.splits and panel.origins from stage.fq
-- and panel.firms. A firm-quarter is an eligible origin when it has a valid deflator
-- (every stage.fq row has) and at least min_history quarters of the firm's panel
-- history through it (pos >= min_history), and its calendar year lies in a split:
-- train [train_first_year, train_last_year], val (.. val_last_year], test
-- (.. test_last_year]. Purging: an origin keeps only targets dated through its split's
-- last quarter (train 2001Q4, val 2009Q4; test through the panel's end).
CREATE OR REPLACE TABLE panel.splits AS
SELECT * FROM (VALUES
    ('train', getvariable('train_first_year') * 4, getvariable('train_last_year') * 4 + 3),
    ('val', getvariable('train_last_year') * 4 + 4, getvariable('val_last_year') * 4 + 3),
    ('test', getvariable('val_last_year') * 4 + 4, getvariable('test_last_year') * 4 + 3)
) AS s(split, first_q, last_q);

CREATE OR REPLACE TABLE panel.origins AS
SELECT f.firm_id, f.q AS origin_q, s.split, f.z, fi.ff48
FROM stage.fq AS f
JOIN panel.splits AS s ON f.q BETWEEN s.first_q AND s.last_q
JOIN panel.firms AS fi USING (firm_id)
WHERE f.pos >= getvariable('min_history')
ORDER BY f.q, f.firm_id;
