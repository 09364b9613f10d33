-- YTD consistency of raw.fundq cash-flow columns (syn_rows, syn_long, syn_values from
-- 010): duplicate filings per calendar quarter, fiscal-quarter sequences, the share of
-- reported YTD values that convert to quarterly flows, and negative quarterly flows of
-- items that cannot be negative (they would reveal a broken YTD accumulation).
SELECT 'raw filings' AS check_name, CAST(count(*) AS DOUBLE) AS value FROM raw.fundq
UNION ALL
SELECT 'calendar quarters with two filings (fiscal-year changes)', CAST(count(*) AS DOUBLE)
FROM (SELECT gvkey, qord(datadate) FROM raw.fundq GROUP BY ALL HAVING count(*) > 1)
UNION ALL
SELECT 'kept rows whose previous row is the previous fiscal quarter (%)',
    round(100.0 * avg(CAST(
        (fqtr = 1 AND prev_fqtr = 4 AND prev_fyearq = fyearq - 1)
        OR (fqtr > 1 AND prev_fqtr = fqtr - 1 AND prev_fyearq = fyearq) AS DOUBLE)), 2)
FROM syn_rows WHERE prev_q IS NOT NULL
UNION ALL
SELECT 'YTD values converted to quarterly flows (%)',
    round(100.0 * (SELECT count(*) FROM syn_values v JOIN ref.items i USING (item_id) WHERE i.statement = 'CF')
        / count(*), 2)
FROM syn_long WHERE col IN (SELECT ytd_source FROM ref.items WHERE ytd_source IS NOT NULL)
UNION ALL
SELECT 'negative quarterly flows of non-negative items (capx, dv, aqc, sstk, prstkc, dltis, dltr, ivch, siv, sppe)',
    CAST(count(*) AS DOUBLE)
FROM syn_values
WHERE item IN ('capxq', 'dvq', 'aqcq', 'sstkq', 'prstkcq', 'dltisq', 'dltrq', 'ivchq', 'sivq', 'sppeq')
  AND v < -1e-9 * (1 + abs(v))
UNION ALL
SELECT 'fiscal year ends in December (% of firms)',
    round(100.0 * avg(CAST(fyr = 12 AS DOUBLE)), 1)
FROM (SELECT gvkey, arg_min(fyr, datadate) AS fyr FROM raw.fundq GROUP BY gvkey);
