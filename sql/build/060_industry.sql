-- Industry: stage.firm_industry from stage.fq_items (or stage.fundq_nonfin) and ref.ff48.
-- Each firm takes its modal historical SIC (sich; ties -> the smallest SIC) and the
-- Fama-French 48 industry whose SIC range holds it; a firm with no sich, or a SIC outside
-- every range, gets industry 49 (Unknown). The mode is counted over the firm's
-- non-financial rows after de-duplication (one row per calendar quarter), or with the
-- rule industry_over_raw_rows before it (the released package counts every
-- non-financial raw row, a row inside several link windows once per window:
-- stage.fundq_linked, step 010).
-- Step 020 gave each row the sich of one raw.company_industry record, which the sources
-- keep unique per (gvkey, datadate), so the count does not depend on DuckDB's plan.
CREATE OR REPLACE TABLE stage.firm_industry AS
WITH rows_counted AS (
    SELECT gvkey, sich FROM stage.fq_items WHERE NOT getvariable('industry_over_raw_rows')
    UNION ALL
    SELECT gvkey, sich FROM stage.fundq_nonfin WHERE getvariable('industry_over_raw_rows')
),
counts AS (
    SELECT gvkey, sich, count(*) AS n
    FROM rows_counted
    WHERE sich IS NOT NULL
    GROUP BY gvkey, sich
),
modal AS (
    SELECT gvkey, arg_min(sich, (-n, sich)) AS sic
    FROM counts
    GROUP BY gvkey
),
firms AS (
    SELECT DISTINCT gvkey FROM stage.fq_items
)
SELECT f.gvkey,
       m.sic::INTEGER AS sic,
       coalesce((SELECT min(r.ff48) FROM ref.ff48 AS r
                 WHERE m.sic BETWEEN r.sic_lo AND r.sic_hi), 49)::SMALLINT AS ff48
FROM firms AS f
LEFT JOIN modal AS m USING (gvkey);
