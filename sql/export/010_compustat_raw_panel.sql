-- The raw panel as the published benchmark's download writes it
-- (compustat_with_permno.parquet) from raw.fundq, raw.company_industry and raw.ccm_link:
-- one row per comp.fundq record that survives the download's two filters, the
-- financial-sector exclusion (a row whose historical SIC lies in
-- [fin_sic_lo, fin_sic_hi]; a missing SIC is kept) and the CRSP link-window trim (firms
-- without a link are kept whole, linked firms keep the rows inside a link window). Its
-- columns, as the download's: the comp.fundq columns (items under their Compustat names:
-- the 52 balance-sheet and income-statement items `{item}`, the 20 cash-flow items
-- year-to-date `{stem}y`; keys gvkey, datadate, fyearq, fqtr; no fyr, which the
-- download does not select), `sich` and `naicsh` of the latest industry record at or
-- before datadate, the link's `permno` and `permco` (NULL for unlinked firms; permco is
-- NULL throughout, raw.ccm_link carries none), `jdate` (datadate's month end) and `year`
-- (datadate's calendar year). Where link windows overlap the download repeats the row,
-- one per link; here the row appears once, with the smallest permno. The download's
-- descriptive columns (tic, conm, indfmt, datafmt, consol, popsrc, liid) are not in
-- raw.*; the package's build does not need them.
WITH industry AS (
    SELECT f.gvkey, f.datadate, f.fyearq, f.fqtr, f.rowid AS raw_row, ci.sich, ci.naicsh
    FROM raw.fundq AS f
    ASOF LEFT JOIN raw.company_industry AS ci
      ON f.gvkey = ci.gvkey AND f.datadate >= ci.datadate
),
linked AS (
    SELECT i.raw_row, min(l.lpermno) AS permno
    FROM industry AS i
    JOIN raw.ccm_link AS l
      ON l.gvkey = i.gvkey
     AND (l.linkdt IS NULL OR i.datadate >= l.linkdt)
     AND (l.linkenddt IS NULL OR i.datadate <= l.linkenddt)
    GROUP BY i.raw_row
)
SELECT f.* EXCLUDE (fyr), i.sich::DOUBLE AS sich, i.naicsh::DOUBLE AS naicsh,
       k.permno::DOUBLE AS permno, NULL::DOUBLE AS permco,
       last_day(f.datadate)::TIMESTAMP AS jdate, year(f.datadate)::BIGINT AS "year"
FROM raw.fundq AS f
JOIN industry AS i ON i.raw_row = f.rowid
LEFT JOIN linked AS k ON k.raw_row = f.rowid
WHERE (k.permno IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM raw.ccm_link AS l WHERE l.gvkey = f.gvkey))
  AND (i.sich IS NULL OR i.sich NOT BETWEEN getvariable('fin_sic_lo') AND getvariable('fin_sic_hi'))
ORDER BY f.gvkey, f.datadate, f.fyearq, f.fqtr
