-- Seasonal random walk under the `published` rules, for submission
-- getvariable('submission_id') into eval.forecasts: for every truth cell of split
-- getvariable('split'), p(h) = level_{(4 - h mod 4) mod 4} of the origin's row in the
-- factor-imputed tabular view (panel.tabular_imputed), as the published package predicts
-- from its (imputed) tabular file: level_0 is the baseline x_t; a lagged level the firm
-- did not report is the imputed value; where the imputation left a gap (a quarter with
-- too few firms) there is no forecast.
INSERT INTO eval.forecasts
WITH lagged AS (
    UNPIVOT (
        SELECT firm_id, origin_q, COLUMNS('_level_[123]$')
        FROM panel.tabular_imputed
        WHERE split = getvariable('split')
    )
    ON COLUMNS('_level_[123]$')
    INTO NAME col VALUE level
),
levels AS (
    SELECT l.firm_id, l.origin_q, i.item_id,
           CAST(right(l.col, 1) AS INTEGER) AS lag, l.level
    FROM lagged AS l
    JOIN ref.items AS i ON i.item = regexp_extract(l.col, '^(.*)_level_[123]$', 1)
)
SELECT
    getvariable('submission_id'),
    c.firm_id, c.origin_q, c.item_id, c.horizon,
    0 AS component,
    CASE WHEN (4 - c.horizon % 4) % 4 = 0 THEN c.baseline ELSE lv.level END AS mu,
    NULL AS sigma
FROM panel.truth AS c
LEFT JOIN levels AS lv
  ON lv.firm_id = c.firm_id AND lv.origin_q = c.origin_q AND lv.item_id = c.item_id
 AND lv.lag = (4 - c.horizon % 4) % 4
WHERE c.split = getvariable('split');
