-- Calendar quarter and de-duplication: stage.fundq_dedup from stage.fundq_nonfin (keys)
-- and raw.fundq (items). Each row is indexed by the calendar quarter of its datadate
-- (q = qord(datadate)); of several rows sharing (gvkey, q), e.g. around a fiscal-year
-- change, the one with the highest (fyearq, fqtr) is kept (then the latest datadate,
-- then the first raw row, to be deterministic). The window runs on the narrow keys; the
-- kept rows' items are then fetched from raw.fundq by rowid.
CREATE OR REPLACE TABLE stage.fundq_dedup AS
WITH kept AS (
    SELECT raw_row, qord(datadate)::INTEGER AS q, sich
    FROM stage.fundq_nonfin
    QUALIFY row_number() OVER (
        PARTITION BY gvkey, qord(datadate)
        ORDER BY fyearq DESC NULLS LAST, fqtr DESC NULLS LAST, datadate DESC, raw_row
    ) = 1
)
SELECT f.*, k.q, k.sich
FROM raw.fundq AS f
JOIN kept AS k ON f.rowid = k.raw_row;
