-- Whether submission getvariable('submission_id') has a usable cell (035's usable_n > 0):
-- a finite prediction at an eligible origin (panel.origins) of a scored split (test, and
-- the split of any footprint), in the identifier forecasts (eval.forecasts, or a written
-- upload's decoded rows). It stops at the first such row, so an acceptable submission
-- is not read whole for it; 035 then runs only to explain a rejection or to name
-- non-finite rows.
WITH scored AS (
    SELECT 'test' AS split
    UNION
    SELECT DISTINCT split FROM eval.footprints
)
SELECT count(*) AS any_usable
FROM (
    SELECT 1
    FROM {{ forecasts }} f
    SEMI JOIN (SELECT firm_id, origin_q FROM panel.origins SEMI JOIN scored USING (split)) o
      ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
    WHERE f.submission_id = getvariable('submission_id') AND isfinite(f.mu)
    LIMIT 1
);
