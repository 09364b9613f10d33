-- Usable cells of submission getvariable('submission_id') in eval.forecasts (its table,
-- the identifier points (eval.forecast_points, or 022's staged upload_points) or
-- eval.forecast_rows), run after 030 or 033 found no blocking
-- problem: rows with a finite prediction, those among them whose
-- origin quarter lies in a scored split (test, and the split of any footprint, from
-- panel.origins), and those whose (firm, origin) is one of that split's eligible origins
-- (panel.origins): only these can ever be scored. Also the finite rows' origin range, up
-- to 3 packed keys (eval.cell_key * 1024 + component) of non-finite predictions and of
-- finite ones for no eligible origin, and each scored split's origin range.
WITH scored AS (
    SELECT 'test' AS split
    UNION
    SELECT DISTINCT split FROM eval.footprints
),
split_range AS (
    SELECT o.split, min(o.origin_q) AS first_q, max(o.origin_q) AS last_q
    FROM panel.origins o SEMI JOIN scored USING (split)
    GROUP BY o.split
),
scored_q AS (
    -- Every origin quarter of a scored split, as keys: an equality join, where a correlated
    -- EXISTS over the ranges made DuckDB materialize every forecast row for its delim join.
    SELECT DISTINCT q FROM split_range, range(first_q, last_q + 1) r(q)
),
forecast AS (
    -- from whichever table holds the submission, each branch read alone (through the
    -- eval.forecasts view, its constant component and sigma cost a projection of every row)
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) * 1024 AS k, firm_id, origin_q, mu
    FROM {{ points }}
    WHERE submission_id = getvariable('submission_id')
    UNION ALL
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) * 1024 + component AS k,
           firm_id, origin_q, mu
    FROM eval.forecast_rows
    WHERE submission_id = getvariable('submission_id')
),
rows AS (
    SELECT
        f.k,
        f.origin_q,
        f.mu IS NOT NULL AND isfinite(f.mu) AS finite,
        sq.q IS NOT NULL AS in_scored_split,
        o.firm_id IS NOT NULL AS eligible
    FROM forecast f
    LEFT JOIN (SELECT firm_id, origin_q FROM panel.origins SEMI JOIN scored USING (split)) o
      ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
    LEFT JOIN scored_q sq ON sq.q = f.origin_q
)
SELECT
    count(*) FILTER (WHERE finite) AS finite_n,
    count(*) FILTER (WHERE finite AND in_scored_split) AS in_scored_split_n,
    count(*) FILTER (WHERE finite AND eligible) AS usable_n,
    min(origin_q) FILTER (WHERE finite) AS first_origin_q,
    max(origin_q) FILTER (WHERE finite) AS last_origin_q,
    min(k, 3) FILTER (WHERE NOT finite) AS non_finite_ex,
    min(k, 3) FILTER (WHERE finite AND in_scored_split AND NOT eligible) AS not_eligible_ex,
    (SELECT list({'split': split, 'first_q': first_q, 'last_q': last_q} ORDER BY first_q)
     FROM split_range) AS scored_splits
FROM rows;
