-- Year-to-date to quarterly: the view stage.fundq_quarterly from stage.fundq_dedup.
-- The 20 cash-flow items arrive year-to-date ({stem}y); within (gvkey, fyearq),
-- fqtr = 1 passes through and fqtr = k > 1 becomes ytd_k - ytd_(k-1) only when the
-- firm's previous row of that fiscal year is fqtr = k - 1; otherwise (the preceding
-- fiscal quarter is not in the file, or fyearq is missing) the quarterly flow is
-- missing. Differencing never crosses a fiscal-year boundary. A row with a missing fqtr
-- has missing flows and the previous row is found by (fqtr, q) over rows with both
-- fiscal fields; with the rule ytd_without_fqtr (the released package converts only rows
-- with fqtr > 1) such a row passes its year-to-date values through and the previous row
-- is found by calendar quarter over rows with a fyearq. It is found with a window on
-- the narrow keys and joined back by (gvkey, q).
CREATE OR REPLACE VIEW stage.fundq_quarterly AS
WITH prev AS (
    SELECT gvkey, q,
           lag(q) OVER (PARTITION BY gvkey, fyearq
                        ORDER BY CASE WHEN getvariable('ytd_without_fqtr') THEN 0 ELSE fqtr END, q)
               AS prev_q
    FROM stage.fundq_dedup
    WHERE fyearq IS NOT NULL AND (fqtr IS NOT NULL OR getvariable('ytd_without_fqtr'))
)
SELECT d.* EXCLUDE (aqcy, capxy, dlcchy, dltisy, dltry, dvy, exrey, fiaoy, fincfy, fopoy, ivacoy, ivchy, ivncfy, ivstchy, oancfy, prstkcy, sivy, sppey, sstky, txbcofy),
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.aqcy
         WHEN p.fqtr = d.fqtr - 1 THEN d.aqcy - p.aqcy
    END AS aqcq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.capxy
         WHEN p.fqtr = d.fqtr - 1 THEN d.capxy - p.capxy
    END AS capxq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.dlcchy
         WHEN p.fqtr = d.fqtr - 1 THEN d.dlcchy - p.dlcchy
    END AS dlcchq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.dltisy
         WHEN p.fqtr = d.fqtr - 1 THEN d.dltisy - p.dltisy
    END AS dltisq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.dltry
         WHEN p.fqtr = d.fqtr - 1 THEN d.dltry - p.dltry
    END AS dltrq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.dvy
         WHEN p.fqtr = d.fqtr - 1 THEN d.dvy - p.dvy
    END AS dvq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.exrey
         WHEN p.fqtr = d.fqtr - 1 THEN d.exrey - p.exrey
    END AS exreq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.fiaoy
         WHEN p.fqtr = d.fqtr - 1 THEN d.fiaoy - p.fiaoy
    END AS fiaoq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.fincfy
         WHEN p.fqtr = d.fqtr - 1 THEN d.fincfy - p.fincfy
    END AS fincfq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.fopoy
         WHEN p.fqtr = d.fqtr - 1 THEN d.fopoy - p.fopoy
    END AS fopoq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.ivacoy
         WHEN p.fqtr = d.fqtr - 1 THEN d.ivacoy - p.ivacoy
    END AS ivacoq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.ivchy
         WHEN p.fqtr = d.fqtr - 1 THEN d.ivchy - p.ivchy
    END AS ivchq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.ivncfy
         WHEN p.fqtr = d.fqtr - 1 THEN d.ivncfy - p.ivncfy
    END AS ivncfq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.ivstchy
         WHEN p.fqtr = d.fqtr - 1 THEN d.ivstchy - p.ivstchy
    END AS ivstchq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.oancfy
         WHEN p.fqtr = d.fqtr - 1 THEN d.oancfy - p.oancfy
    END AS oancfq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.prstkcy
         WHEN p.fqtr = d.fqtr - 1 THEN d.prstkcy - p.prstkcy
    END AS prstkcq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.sivy
         WHEN p.fqtr = d.fqtr - 1 THEN d.sivy - p.sivy
    END AS sivq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.sppey
         WHEN p.fqtr = d.fqtr - 1 THEN d.sppey - p.sppey
    END AS sppeq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.sstky
         WHEN p.fqtr = d.fqtr - 1 THEN d.sstky - p.sstky
    END AS sstkq,
    CASE WHEN d.fqtr = 1 OR (d.fqtr IS NULL AND getvariable('ytd_without_fqtr')) THEN d.txbcofy
         WHEN p.fqtr = d.fqtr - 1 THEN d.txbcofy - p.txbcofy
    END AS txbcofq
FROM stage.fundq_dedup AS d
LEFT JOIN prev AS w ON w.gvkey = d.gvkey AND w.q = d.q
LEFT JOIN stage.fundq_dedup AS p ON p.gvkey = d.gvkey AND p.q = w.prev_q;
