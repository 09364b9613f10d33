-- eval.forecast_rows of submission getvariable('submission_id') from the temp view
-- `submission_in` (the parquet file, renamed columns) in ONE streaming pass: gvkey ->
-- panel.firms.firm_id, item name -> ref.items.item_id, origin as a quarter ordinal. A
-- key that is unknown, null or invalid (non-integer horizon, horizon outside 1..20,
-- unparseable origin, out-of-range component) is stored as NULL, so the checks of 030
-- see it and the caller rolls back and reports the file's problems with 010.
INSERT INTO eval.forecast_rows
SELECT
    getvariable('submission_id') AS submission_id,
    f.firm_id,
    s.origin_q,
    i.item_id,
    CASE WHEN s.horizon_num BETWEEN 1 AND 20 AND s.horizon_num = floor(s.horizon_num)
         THEN CAST(s.horizon_num AS TINYINT) END AS horizon,
    CASE WHEN s.component BETWEEN 0 AND 1023 THEN CAST(s.component AS SMALLINT) END AS component,
    s.prediction AS mu,
    s.sigma
FROM submission_in s
LEFT JOIN panel.firms f ON f.gvkey = s.firm
LEFT JOIN ref.items i ON i.item = s.target AND i.is_target;
