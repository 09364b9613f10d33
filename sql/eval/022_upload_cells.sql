-- The keyed rows of a file kept in the upload store (019's view `submission_keyed`: a
-- point file, or a single-family density file with a sigma; no component column, not a
-- quantile grid) staged in the temp table upload_points for the checks (030 or 033, 031
-- and 035 read it as their points and forecasts identifiers), with 020's columns and the
-- constant component the duplicate report names. Once valid they are written to the
-- upload store as one content-addressed parquet file (app/scoring/submissions/store.py),
-- not inserted into eval.forecast_points or eval.forecast_rows: nothing of the file goes
-- into a table.
CREATE OR REPLACE TEMP TABLE upload_points AS
SELECT
    CAST(getvariable('submission_id') AS INTEGER) AS submission_id,
    firm_id,
    origin_q,
    item_id,
    horizon,
    CAST(0 AS SMALLINT) AS component,
    prediction AS mu,
    sigma
FROM submission_keyed;
