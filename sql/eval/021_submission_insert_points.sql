-- eval.forecast_points rows of a point submission getvariable('submission_id') (a file
-- without sigma and component columns, not a quantile forecast) from the keyed rows of the
-- file (019's view `submission_keyed`), without 020's component (0) and sigma (NULL)
-- columns, which eval.forecasts shows for these rows.
INSERT INTO eval.forecast_points
SELECT
    getvariable('submission_id') AS submission_id,
    firm_id,
    origin_q,
    item_id,
    horizon,
    prediction AS mu
FROM submission_keyed;
