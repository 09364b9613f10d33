-- The raw panel in the published benchmark's download layout (compustat_with_permno.parquet)
-- from raw.fundq, raw.company_industry and raw.ccm_link: one row per comp.fundq record
-- that survives the CRSP link-window trim (firms without a link are kept whole, linked
-- firms keep the rows inside a link window), with the historical SIC/NAICS of the latest
-- industry record at or before datadate (`sich`, `naicsh`) and the link's `permno`
-- (NULL for unlinked firms; the smallest permno where windows overlap, so a row is
-- never duplicated). Items keep their Compustat names: the 52 balance-sheet and
-- income-statement items `{item}`, the 20 cash-flow items year-to-date `{stem}y`.
-- The financial-sector exclusion is left to the builder (it is part of the build).
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
       k.permno::DOUBLE AS permno
FROM raw.fundq AS f
JOIN industry AS i ON i.raw_row = f.rowid
LEFT JOIN linked AS k ON k.raw_row = f.rowid
WHERE k.permno IS NOT NULL
   OR NOT EXISTS (SELECT 1 FROM raw.ccm_link AS l WHERE l.gvkey = f.gvkey)
ORDER BY f.gvkey, f.datadate, f.fyearq, f.fqtr
