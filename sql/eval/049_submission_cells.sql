-- The temp view submission_cells: the single forecasts of submission
-- getvariable('submission_id') from eval.forecasts as (packed cell key, mu, sigma), the
-- input 050 scores. A file kept in the upload store gives the same three columns from
-- its parquet file instead (app/scoring/submissions/store.py `cell_relation`: the file
-- already holds the packed key, so only the truth computes one).
CREATE OR REPLACE TEMP VIEW submission_cells AS
SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, mu, sigma
FROM eval.forecasts
WHERE submission_id = getvariable('submission_id');
