-- eval.forecast_points rows of a point submission getvariable('submission_id') (a file
-- without sigma and component columns, not a quantile grid) from the temp view
-- `submission_in`, in ONE streaming pass: the same key coding as 020 (gvkey ->
-- panel.firms.firm_id, item name -> ref.items.item_id, origin as a quarter ordinal,
-- integral horizon), packed into one key, eval.forecast_key(firm, origin, item, horizon,
-- 0). A key that is unknown, null or invalid is stored as a NULL key, so 034 sees it and
-- the caller rolls back and reports the file's problems with 010.
INSERT INTO eval.forecast_points
SELECT
    getvariable('submission_id') AS submission_id,
    eval.forecast_key(f.firm_id, s.origin_q, i.item_id,
                      CASE WHEN s.horizon_num BETWEEN 1 AND 20 AND s.horizon_num = floor(s.horizon_num)
                           THEN CAST(s.horizon_num AS TINYINT) END, 0) AS k,
    s.prediction AS mu
FROM submission_in s
LEFT JOIN panel.firms f ON f.gvkey = s.firm
LEFT JOIN ref.items i ON i.item = s.target AND i.is_target;
