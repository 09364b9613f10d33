-- Calendar quarter and de-duplication: stage.fundq_dedup from stage.fundq_nonfin (keys)
-- and raw.fundq (items). Each row is indexed by the calendar quarter of its datadate
-- (q = qord(datadate)); of several rows sharing (gvkey, q), e.g. around a fiscal-year
-- change, the one with the highest (fyearq, fqtr) is kept. Rule sets differ only in
-- missing fiscal fields and exact ties: `paper` ranks a missing fyearq/fqtr lowest and
-- then takes the latest datadate and the first raw row; `published` (the released
-- package sorts by (fyearq, fqtr) with missing values last and keeps the last row)
-- ranks a missing fyearq/fqtr highest and then takes the latest datadate and the last
-- raw row. The window runs on the narrow keys; the kept rows' items are then fetched
-- from raw.fundq by rowid.
CREATE OR REPLACE TABLE stage.fundq_dedup AS
WITH kept AS (
    SELECT raw_row, qord(datadate)::INTEGER AS q, sich
    FROM stage.fundq_nonfin
    QUALIFY row_number() OVER (
        PARTITION BY gvkey, qord(datadate)
        ORDER BY (fyearq IS NULL) = getvariable('published') DESC, fyearq DESC,
                 (fqtr IS NULL) = getvariable('published') DESC, fqtr DESC,
                 datadate DESC,
                 CASE WHEN getvariable('published') THEN -raw_row ELSE raw_row END
    ) = 1
)
SELECT f.*, k.q, k.sich
FROM raw.fundq AS f
JOIN kept AS k ON f.rowid = k.raw_row;
