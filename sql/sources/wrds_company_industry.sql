-- raw.company_industry from the pulled comp.co_industry records (WRDS source). The
-- table must hold one record per (gvkey, datadate): the build gives each firm-quarter
-- the latest record at or before its datadate, and two records on one date would make
-- that choice depend on the plan. Real comp.co_industry holds such pairs, so of
-- several records on one (gvkey, datadate) this keeps the one with a SIC over one
-- without, then a NAICS over none, then the smallest SIC, then the smallest NAICS.
-- (The published package keeps whichever record the server returns last; no rule that
-- ignores the server's order can match that everywhere.) Reads the view
-- `industry_pulled` (the cached chunk). The WRDS source checks the result is unique.
SELECT gvkey, datadate, sich, naicsh
FROM industry_pulled
QUALIFY row_number() OVER (
    PARTITION BY gvkey, datadate
    ORDER BY sich IS NULL, naicsh IS NULL, sich, naicsh
) = 1
ORDER BY gvkey, datadate;
