-- Link-window trim: the view stage.fundq_linked (row keys: raw_row = raw.fundq's rowid,
-- gvkey, datadate, fyearq, fqtr) from raw.fundq and raw.ccm_link. A firm that appears in
-- the CRSP-Compustat link table keeps only the rows whose datadate falls inside one of
-- its link windows [linkdt, linkenddt] (a missing linkdt is open to the past, a missing
-- linkenddt means the link is still active); a firm absent from the link table is kept
-- whole. A row inside several windows of its firm (overlapping links, e.g. an LC and an
-- LU link to two permnos) is kept once, or with the rule link_window_copies (the
-- released package's left join on gvkey) once per window that holds it, so its modal
-- SIC (060) counts those copies. The copies share raw_row, so the calendar-quarter
-- de-duplication (030) keeps at most one of them. Steps 010-030 work on these narrow
-- keys; 030 fetches the surviving rows' items.
CREATE OR REPLACE VIEW stage.fundq_linked AS
SELECT f.rowid AS raw_row, f.gvkey, f.datadate, f.fyearq, f.fqtr
FROM raw.fundq AS f
WHERE NOT EXISTS (SELECT 1 FROM raw.ccm_link AS l WHERE l.gvkey = f.gvkey)
   OR (NOT getvariable('link_window_copies') AND EXISTS (
        SELECT 1
        FROM raw.ccm_link AS l
        WHERE l.gvkey = f.gvkey
          AND (l.linkdt IS NULL OR f.datadate >= l.linkdt)
          AND (l.linkenddt IS NULL OR f.datadate <= l.linkenddt)
   ))
UNION ALL
SELECT f.rowid AS raw_row, f.gvkey, f.datadate, f.fyearq, f.fqtr
FROM raw.fundq AS f
JOIN raw.ccm_link AS l
  ON l.gvkey = f.gvkey
 AND (l.linkdt IS NULL OR f.datadate >= l.linkdt)
 AND (l.linkenddt IS NULL OR f.datadate <= l.linkenddt)
WHERE getvariable('link_window_copies');
