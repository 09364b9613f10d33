-- Calendar quarter and de-duplication: stage.fundq_dedup from stage.fundq_nonfin (keys)
-- and raw.fundq (items). Each row is indexed by the calendar quarter of its datadate
-- (q = qord(datadate)); of several rows sharing (gvkey, q), e.g. around a fiscal-year
-- change, the one with the highest (fyearq, fqtr) is kept, then the latest datadate,
-- then the last raw row (the paper's "sorted ... and the last record is kept"). A
-- missing fyearq/fqtr ranks lowest, or with the rule dedup_missing_fiscal_first highest
-- (the released package sorts missing values last and keeps the last row). The window runs on the narrow keys; the kept rows' items are then fetched
-- from raw.fundq by rowid.
CREATE OR REPLACE TABLE stage.fundq_dedup AS
WITH kept AS (
    SELECT raw_row, qord(datadate)::INTEGER AS q, sich
    FROM stage.fundq_nonfin
    QUALIFY row_number() OVER (
        PARTITION BY gvkey, qord(datadate)
        ORDER BY (fyearq IS NULL) = getvariable('dedup_missing_fiscal_first') DESC, fyearq DESC,
                 (fqtr IS NULL) = getvariable('dedup_missing_fiscal_first') DESC, fqtr DESC,
                 datadate DESC, raw_row DESC
    ) = 1
)
SELECT f.*, k.q, k.sich
FROM raw.fundq AS f
JOIN kept AS k ON f.rowid = k.raw_row;
