-- Deflator: panel.firms, stage.fq and panel.values from stage.fq_items and
-- stage.firm_industry. z = |ltq| + |seqq| + z_eps when both are reported and the sum is
-- finite and positive; otherwise |atq| + z_eps when that is; otherwise the firm-quarter
-- has no valid deflator (z NULL). Such firm-quarters are dropped from the panel; with
-- the rule keep_undeflatable_quarters their reported values are kept (the released
-- package deflates every lead and lag by the ORIGIN's z, so they still serve as targets
-- and lagged features) but they are never origins and never enter the statistics.
-- Firms get dense integer keys (firm_id in gvkey order: firms with a valid z somewhere,
-- with keep_undeflatable_quarters every firm); pos = the position among the firm's scale-valid quarters (NULL without z).
-- stage.fq holds each kept firm-quarter's z, pos and its 78 item values as a list in
-- item_id order. panel.values is the tuple view: one row per reported (firm, quarter,
-- item) value, with item 0 (`scale`) holding z where valid; sorted by (q, firm_id,
-- item_id) for range scans.
CREATE OR REPLACE TEMP MACRO pf_deflator(ltq, seqq, atq) AS
    CASE
        WHEN ltq IS NOT NULL AND seqq IS NOT NULL
             AND isfinite(abs(ltq) + abs(seqq) + getvariable('z_eps'))
             AND abs(ltq) + abs(seqq) + getvariable('z_eps') > 0
            THEN abs(ltq) + abs(seqq) + getvariable('z_eps')
        WHEN atq IS NOT NULL
             AND isfinite(abs(atq) + getvariable('z_eps'))
             AND abs(atq) + getvariable('z_eps') > 0
            THEN abs(atq) + getvariable('z_eps')
    END;

CREATE OR REPLACE TABLE panel.firms AS
SELECT (row_number() OVER (ORDER BY f.gvkey))::INTEGER AS firm_id,
       f.gvkey, f.sic, f.ff48
FROM stage.firm_industry AS f
WHERE getvariable('keep_undeflatable_quarters')
   OR f.gvkey IN (SELECT gvkey FROM stage.fq_items WHERE pf_deflator(ltq, seqq, atq) IS NOT NULL)
ORDER BY firm_id;

CREATE OR REPLACE TABLE stage.fq AS
WITH d AS (
    SELECT f.firm_id, i.q, pf_deflator(i.ltq, i.seqq, i.atq) AS z,
           list_value(*COLUMNS(i.* EXCLUDE (gvkey, q, sich))) AS vals
    FROM stage.fq_items AS i
    JOIN panel.firms AS f USING (gvkey)
    WHERE pf_deflator(i.ltq, i.seqq, i.atq) IS NOT NULL OR getvariable('keep_undeflatable_quarters')
),
p AS (
    SELECT firm_id, q, (row_number() OVER (PARTITION BY firm_id ORDER BY q))::INTEGER AS pos
    FROM d
    WHERE z IS NOT NULL
)
SELECT d.firm_id, d.q, d.z, p.pos, d.vals
FROM d LEFT JOIN p USING (firm_id, q)
ORDER BY d.q, d.firm_id;

-- Unnesting stage.fq (stored in (q, firm_id) order) keeps that order: no sort needed.
CREATE OR REPLACE TABLE panel.values AS
SELECT firm_id, q, item_id, v
FROM (
    SELECT firm_id, q,
           unnest(range(0, len(vals) + 1))::SMALLINT AS item_id,
           unnest(list_prepend(z, vals)) AS v
    FROM stage.fq
)
WHERE v IS NOT NULL;

DROP MACRO pf_deflator;
