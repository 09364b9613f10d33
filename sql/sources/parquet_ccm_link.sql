-- raw.ccm_link derived from a raw panel's permno column (parquet source, when no
-- --links file is given). The published panel carries the CRSP permno attached inside
-- each link window, so each (gvkey, permno) becomes one link spanning the first to the
-- last datadate that carries it (linktype 'LC', linkprim 'P'). The build's link-window
-- trim then keeps exactly those firm-quarters of linked firms; firms without any permno
-- have no link and are kept whole. Reads the view `panel` (the validated file).
SELECT
    gvkey,
    CAST(permno AS INTEGER) AS lpermno,
    'LC' AS linktype,
    'P' AS linkprim,
    min(CAST(datadate AS DATE)) AS linkdt,
    max(CAST(datadate AS DATE)) AS linkenddt
FROM panel
WHERE permno IS NOT NULL
GROUP BY gvkey, CAST(permno AS INTEGER)
ORDER BY gvkey, linkdt
