-- eval.forecast_points rows of a point submission getvariable('submission_id') (a file
-- without sigma and component columns, not a quantile grid) from the temp view
-- `submission_in`, in ONE streaming pass: 020's key coding (gvkey -> panel.firms.firm_id,
-- item name -> ref.items.item_id, origin as a quarter ordinal, integral horizon 1..20) and
-- its NULL for a key that is unknown, null or invalid, so that 030 sees it and the caller
-- rolls back and reports the file's problems with 010; without 020's component (0) and
-- sigma (NULL) columns, which eval.forecasts shows for these rows.
INSERT INTO eval.forecast_points
SELECT
    getvariable('submission_id') AS submission_id,
    f.firm_id,
    s.origin_q,
    i.item_id,
    CASE WHEN s.horizon_num BETWEEN 1 AND 20 AND s.horizon_num = floor(s.horizon_num)
         THEN CAST(s.horizon_num AS TINYINT) END AS horizon,
    s.prediction AS mu
FROM submission_in s
LEFT JOIN panel.firms f ON f.gvkey = s.firm
LEFT JOIN ref.items i ON i.item = s.target AND i.is_target;
