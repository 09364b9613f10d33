-- Calendar quarter and de-duplication: stage.fundq_dedup from stage.fundq_nonfin.
-- Each row is indexed by the calendar quarter of its datadate (q = qord(datadate));
-- of several rows sharing (gvkey, q), e.g. around a fiscal-year change, the one with
-- the highest (fyearq, fqtr) is kept (then the latest datadate, to be deterministic).
CREATE OR REPLACE VIEW stage.fundq_dedup AS
SELECT * EXCLUDE (rn)
FROM (
    SELECT *, qord(datadate)::INTEGER AS q,
           row_number() OVER (
               PARTITION BY gvkey, qord(datadate)
               ORDER BY fyearq DESC NULLS LAST, fqtr DESC NULLS LAST, datadate DESC
           ) AS rn
    FROM stage.fundq_nonfin
)
WHERE rn = 1;
