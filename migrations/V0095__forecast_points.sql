-- Point forecasts (one component, no sigma, not a quantile grid: uploads without sigma and
-- component columns, and the reference baselines) get a narrow table: (submission_id,
-- key, mu) with one packed key, eval.cell_key(firm, origin, item, horizon) * 1024 +
-- component (component 0). Writing eight columns of which two are constant (component 0,
-- sigma NULL) was most of an upload's insert (DuckDB pays per column and row, constant
-- or NULL ones too), and every reader packed the four key columns again for its joins.
-- A key that is null or cannot be packed (unknown firm or item, horizon outside 1..20,
-- origin outside 0..16383) is stored as a NULL key: the checks reject the submission
-- and the upload's file checks explain it.
-- The table every other forecast is written to keeps its eight columns under a new name,
-- eval.forecast_rows, and eval.forecasts becomes a view over both, so readers see the
-- same rows as before (a narrow row as component 0, sigma NULL). Rows stored before stay
-- where they are.
ALTER TABLE eval.forecasts RENAME TO forecast_rows;

CREATE TABLE eval.forecast_points (
    submission_id  INTEGER NOT NULL,
    k              BIGINT,                     -- eval.cell_key(...) * 1024 + component; NULL: bad key
    mu             DOUBLE
);

-- The packed key of a forecast row, NULL unless every part lies in its packable range
-- (firm_id 0..2^27 - 1, origin_q 0..16383, item_id 0..127, horizon 1..20, component
-- 0..1023); eval.forecast_key(...) // 1024 is eval.cell_key(...).
CREATE MACRO eval.forecast_key(firm_id, origin_q, item_id, horizon, component) AS
    CASE WHEN firm_id BETWEEN 0 AND 134217727 AND origin_q BETWEEN 0 AND 16383
              AND item_id BETWEEN 0 AND 127 AND horizon BETWEEN 1 AND 20
              AND component BETWEEN 0 AND 1023
         THEN eval.cell_key(firm_id, origin_q, item_id, horizon) * 1024 + component END;

CREATE VIEW eval.forecasts AS
SELECT submission_id, firm_id, origin_q, item_id, horizon, component, mu, sigma
FROM eval.forecast_rows
UNION ALL
SELECT submission_id,
       CAST(k >> 36 AS INTEGER) AS firm_id,
       CAST((k >> 22) & 16383 AS INTEGER) AS origin_q,
       CAST((k >> 15) & 127 AS SMALLINT) AS item_id,
       CAST((k >> 10) & 31 AS TINYINT) AS horizon,
       CAST(k & 1023 AS SMALLINT) AS component,
       mu,
       NULL::DOUBLE AS sigma
FROM eval.forecast_points;
