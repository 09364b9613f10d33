-- raw.company_industry derived from a raw panel's own sich/naicsh columns (parquet
-- source, when no --industry file is given): one record per (gvkey, datadate) of the
-- panel, nulls included, so that "the latest record at or before datadate" gives every
-- firm-quarter exactly the codes the panel carries. Where a (gvkey, datadate) has
-- several fiscal rows, the row with the highest (fyearq, fqtr) wins, as in the build's
-- duplicate rule. Reads the view `panel` (the validated file).
SELECT
    gvkey,
    CAST(datadate AS DATE) AS datadate,
    CAST(sich AS INTEGER) AS sich,
    CAST(naicsh AS INTEGER) AS naicsh
FROM panel
QUALIFY row_number() OVER (
    PARTITION BY gvkey, CAST(datadate AS DATE)
    ORDER BY fyearq DESC NULLS LAST, fqtr DESC NULLS LAST, file_row_number
) = 1
ORDER BY gvkey, datadate
