-- Financial-sector exclusion: the view stage.fundq_nonfin (keys and sich) from
-- stage.fundq_linked and raw.company_industry. Each row takes the historical SIC (sich) of the firm's latest
-- industry record at or before its datadate; rows with sich in
-- [fin_sic_lo, fin_sic_hi] (6000-6999) are dropped, rows with a missing sich are kept.
CREATE OR REPLACE VIEW stage.fundq_nonfin AS
WITH tagged AS (
    SELECT f.*, ci.sich
    FROM stage.fundq_linked AS f
    ASOF LEFT JOIN (
        SELECT gvkey, datadate AS ci_date, sich
        FROM raw.company_industry
    ) AS ci
      ON f.gvkey = ci.gvkey AND f.datadate >= ci.ci_date
)
SELECT *
FROM tagged
WHERE sich IS NULL
   OR sich NOT BETWEEN getvariable('fin_sic_lo') AND getvariable('fin_sic_hi');
