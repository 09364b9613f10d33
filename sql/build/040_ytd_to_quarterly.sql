-- Year-to-date to quarterly: stage.fundq_quarterly from stage.fundq_dedup. The 20
-- cash-flow items arrive year-to-date ({stem}y); within (gvkey, fyearq) in fiscal
-- quarter order, fqtr = 1 passes through and fqtr = k > 1 becomes ytd_k - ytd_(k-1)
-- only when the firm's previous row of that fiscal year is fqtr = k - 1; otherwise
-- (the preceding fiscal quarter is not in the file, or fqtr/fyearq is missing) the
-- quarterly flow is missing. Differencing never crosses a fiscal-year boundary.
CREATE OR REPLACE VIEW stage.fundq_quarterly AS
SELECT * EXCLUDE (prev_fqtr, aqcy, capxy, dlcchy, dltisy, dltry, dvy, exrey, fiaoy, fincfy, fopoy, ivacoy, ivchy, ivncfy, ivstchy, oancfy, prstkcy, sivy, sppey, sstky, txbcofy),
    CASE WHEN fqtr = 1 THEN aqcy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN aqcy - lag(aqcy) OVER w
    END AS aqcq,
    CASE WHEN fqtr = 1 THEN capxy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN capxy - lag(capxy) OVER w
    END AS capxq,
    CASE WHEN fqtr = 1 THEN dlcchy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN dlcchy - lag(dlcchy) OVER w
    END AS dlcchq,
    CASE WHEN fqtr = 1 THEN dltisy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN dltisy - lag(dltisy) OVER w
    END AS dltisq,
    CASE WHEN fqtr = 1 THEN dltry
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN dltry - lag(dltry) OVER w
    END AS dltrq,
    CASE WHEN fqtr = 1 THEN dvy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN dvy - lag(dvy) OVER w
    END AS dvq,
    CASE WHEN fqtr = 1 THEN exrey
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN exrey - lag(exrey) OVER w
    END AS exreq,
    CASE WHEN fqtr = 1 THEN fiaoy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN fiaoy - lag(fiaoy) OVER w
    END AS fiaoq,
    CASE WHEN fqtr = 1 THEN fincfy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN fincfy - lag(fincfy) OVER w
    END AS fincfq,
    CASE WHEN fqtr = 1 THEN fopoy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN fopoy - lag(fopoy) OVER w
    END AS fopoq,
    CASE WHEN fqtr = 1 THEN ivacoy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN ivacoy - lag(ivacoy) OVER w
    END AS ivacoq,
    CASE WHEN fqtr = 1 THEN ivchy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN ivchy - lag(ivchy) OVER w
    END AS ivchq,
    CASE WHEN fqtr = 1 THEN ivncfy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN ivncfy - lag(ivncfy) OVER w
    END AS ivncfq,
    CASE WHEN fqtr = 1 THEN ivstchy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN ivstchy - lag(ivstchy) OVER w
    END AS ivstchq,
    CASE WHEN fqtr = 1 THEN oancfy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN oancfy - lag(oancfy) OVER w
    END AS oancfq,
    CASE WHEN fqtr = 1 THEN prstkcy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN prstkcy - lag(prstkcy) OVER w
    END AS prstkcq,
    CASE WHEN fqtr = 1 THEN sivy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN sivy - lag(sivy) OVER w
    END AS sivq,
    CASE WHEN fqtr = 1 THEN sppey
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN sppey - lag(sppey) OVER w
    END AS sppeq,
    CASE WHEN fqtr = 1 THEN sstky
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN sstky - lag(sstky) OVER w
    END AS sstkq,
    CASE WHEN fqtr = 1 THEN txbcofy
         WHEN prev_fqtr = fqtr - 1 AND fyearq IS NOT NULL THEN txbcofy - lag(txbcofy) OVER w
    END AS txbcofq
FROM (
    SELECT *, lag(fqtr) OVER w AS prev_fqtr
    FROM stage.fundq_dedup
    WINDOW w AS (PARTITION BY gvkey, fyearq ORDER BY fqtr, q)
)
WINDOW w AS (PARTITION BY gvkey, fyearq ORDER BY fqtr, q);
