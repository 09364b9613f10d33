-- What a WRDS pull holds that the ingest or the build must resolve, counted for the
-- ingest summary (one row). Reads the views fundq_pulled, industry_pulled and
-- links_pulled (the cached chunks, with filename and file_row_number).
--   tied_keys / tied_rows: (gvkey, datadate, fyearq, fqtr) keys held by several records
--     (exact duplicates; raw.fundq keeps them in the pull's order, the build keeps one);
--   missing_fiscal_key: records without fyearq or fqtr;
--   overlap_records / overlap_windows: fundq records inside more than one link window,
--     and the windows that hold them (`published` keeps a copy per window);
--   industry_dup_keys / industry_dup_records: (gvkey, datadate) keys with several
--     co_industry records, and those records (sql/sources/wrds_company_industry.sql
--     keeps one per key).
WITH ties AS (
    SELECT count(*) AS n
    FROM fundq_pulled
    GROUP BY gvkey, datadate, fyearq, fqtr
    HAVING count(*) > 1
),
inside AS (
    SELECT count(*) AS n
    FROM fundq_pulled AS f
    JOIN links_pulled AS l
      ON l.gvkey = f.gvkey
     AND (l.linkdt IS NULL OR f.datadate >= l.linkdt)
     AND (l.linkenddt IS NULL OR f.datadate <= l.linkenddt)
    GROUP BY f.filename, f.file_row_number
    HAVING count(*) > 1
),
industry_dups AS (
    SELECT count(*) AS n
    FROM industry_pulled
    GROUP BY gvkey, datadate
    HAVING count(*) > 1
)
SELECT
    (SELECT count(*) FROM ties) AS tied_keys,
    (SELECT coalesce(sum(n), 0) FROM ties) AS tied_rows,
    (SELECT count(*) FROM fundq_pulled WHERE fyearq IS NULL OR fqtr IS NULL)
        AS missing_fiscal_key,
    (SELECT count(*) FROM inside) AS overlap_records,
    (SELECT coalesce(sum(n), 0) FROM inside) AS overlap_windows,
    (SELECT count(*) FROM industry_dups) AS industry_dup_keys,
    (SELECT coalesce(sum(n), 0) FROM industry_dups) AS industry_dup_records;
