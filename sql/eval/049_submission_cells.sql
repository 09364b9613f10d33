-- The temp view submission_cells: the forecasts of submission getvariable('submission_id')
-- from eval.forecasts as (packed cell key, component, mu, sigma) with the truth's actual
-- of their cell (panel.truth cells of finite actual and baseline, origins
-- getvariable('first_q')..('last_q'), the submission's range, so the truth scan skips
-- other row groups): the input of the per-cell terms (057 single, 054 mixture, 056
-- quantile forecast) and of 050's insert. A file kept in the upload store meets its truth by
-- position instead (proforma.app.scoring.grid).
CREATE OR REPLACE TEMP VIEW submission_cells AS
WITH truth AS (
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, actual
    FROM panel.truth
    WHERE origin_q BETWEEN getvariable('first_q') AND getvariable('last_q')
      AND isfinite(actual) AND isfinite(baseline)
)
SELECT f.cell, f.component, f.mu, f.sigma, t.actual
FROM (SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, component, mu, sigma
      FROM eval.forecasts
      WHERE submission_id = getvariable('submission_id')) f
JOIN truth t ON t.cell = f.cell;
