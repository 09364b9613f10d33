-- Point forecasts (one component, no sigma, not a quantile grid: uploads without sigma and
-- component columns, and the reference baselines) get a narrow table without the two
-- constant columns: (submission_id, firm_id, origin_q, item_id, horizon, mu). Writing
-- eight columns of which two are constant (component 0, sigma NULL) cost an upload's
-- insert a quarter of its time: DuckDB pays per column and row, constant or NULL ones too.
-- The four key columns stay apart (one packed key column compressed worse: the key jumps
-- between firms from row to row, where each column alone is nearly run-length).
-- The table every other forecast is written to keeps its eight columns under a new name,
-- eval.forecast_rows, and eval.forecasts becomes a view over both, so every reader sees
-- the same rows as before (a narrow row as component 0, sigma NULL). Rows stored before
-- stay where they are.
ALTER TABLE eval.forecasts RENAME TO forecast_rows;

CREATE TABLE eval.forecast_points (
    submission_id  INTEGER NOT NULL,
    firm_id        INTEGER,
    origin_q       INTEGER,
    item_id        SMALLINT,
    horizon        TINYINT,
    mu             DOUBLE
);

CREATE VIEW eval.forecasts AS
SELECT submission_id, firm_id, origin_q, item_id, horizon, component, mu, sigma
FROM eval.forecast_rows
UNION ALL
SELECT submission_id, firm_id, origin_q, item_id, horizon, CAST(0 AS SMALLINT) AS component,
       mu, CAST(NULL AS DOUBLE) AS sigma
FROM eval.forecast_points;
