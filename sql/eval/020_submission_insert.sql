-- eval.forecast_rows of submission getvariable('submission_id') from the keyed rows of
-- the file (019's view `submission_keyed`); a component outside 0..1023 is stored as NULL
-- like any invalid key, so the checks of 030 see it.
INSERT INTO eval.forecast_rows
SELECT
    getvariable('submission_id') AS submission_id,
    firm_id,
    origin_q,
    item_id,
    horizon,
    CASE WHEN component BETWEEN 0 AND 1023 THEN CAST(component AS SMALLINT) END AS component,
    prediction AS mu,
    sigma
FROM submission_keyed;
