-- Problems of the integer-keyed rows of submission getvariable('submission_id') in
-- the identifier forecasts (eval.forecasts: model batches land there directly, uploads
-- after 010; or 022's staged upload_points of a density file kept in the upload store):
-- null keys,
-- unknown firm ids and items, horizons outside 1..20, bad sigma (not finite, or outside
-- the normal range of a 32-bit float) or component, whether
-- any (cell, component) key occurs twice (duplicate_excess: the rows beyond the first of
-- their key; 031 counts and names the keys when it is not 0), and the warnings.
WITH dup AS (
    -- Exact, without hashing every key: rows are grouped by (firm, origin, component, item
    -- pair) and each sets the bit (item % 2) * 32 + horizon of a 64-bit mask; a group has
    -- a repeated key exactly when it has more rows than set bits. 1.4M small groups instead
    -- of one per row: the full hash aggregate was most of this step's time. A separate
    -- scan: sharing one CTE with the flags below would materialize it.
    SELECT coalesce(sum(n - bit_count(bits)), 0) AS excess
    FROM (
        SELECT count(*) AS n,
               bit_or(CAST(1 AS BIGINT) << CAST((item_id % 2) * 32 + horizon AS BIGINT)) AS bits
        FROM {{ forecasts }}
        WHERE submission_id = getvariable('submission_id')
          AND firm_id IS NOT NULL AND origin_q BETWEEN 0 AND 16383 AND item_id BETWEEN 0 AND 127
          AND horizon BETWEEN 1 AND 20 AND component BETWEEN 0 AND 1023
        GROUP BY ((CAST(firm_id AS BIGINT) * 16384 + origin_q) * 64 + item_id // 2) * 1024
                 + component
    )
),
components AS (
    SELECT count(*) AS n_components
    FROM (SELECT DISTINCT component FROM {{ forecasts }}
          WHERE submission_id = getvariable('submission_id'))
),
flags AS (
    SELECT
        count(*) AS n_rows,
        count(*) FILTER (WHERE firm_id IS NULL OR origin_q IS NULL OR item_id IS NULL
                                OR horizon IS NULL) AS null_key_n,
        count(*) FILTER (WHERE unknown_firm) AS unknown_firm_n,
        min(firm_id, 3) FILTER (WHERE unknown_firm) AS unknown_firm_ex,
        count(*) FILTER (WHERE unknown_item) AS unknown_item_n,
        min(item_id, 3) FILTER (WHERE unknown_item) AS unknown_item_ex,
        count(*) FILTER (WHERE NOT (origin_q BETWEEN 0 AND 16383)) AS bad_origin_n,
        min(origin_q, 3) FILTER (WHERE NOT (origin_q BETWEEN 0 AND 16383)) AS bad_origin_ex,
        count(*) FILTER (WHERE NOT (horizon BETWEEN 1 AND 20)) AS horizon_out_of_range_n,
        min(horizon, 3) FILTER (WHERE NOT (horizon BETWEEN 1 AND 20)) AS horizon_out_of_range_ex,
        count(*) FILTER (WHERE component IS NULL OR NOT (component BETWEEN 0 AND 1023))
            AS bad_component_n,
        -- (the normal range of the 32-bit floats sigma is scored in; 010 holds the same)
        count(*) FILTER (WHERE isfinite(mu) AND sigma IS NOT NULL
                                AND NOT (sigma BETWEEN 1.1754943508222875e-38 AND 3.4028234663852886e38)) AS bad_sigma_n,
        min(sigma, 3) FILTER (WHERE isfinite(mu) AND sigma IS NOT NULL
                                   AND NOT (sigma BETWEEN 1.1754943508222875e-38 AND 3.4028234663852886e38)) AS bad_sigma_ex,
        count(*) FILTER (WHERE isfinite(mu) AND sigma IS NULL) AS sigma_null_n,
        count(*) FILTER (WHERE sigma IS NOT NULL) AS sigma_present_n,
        count(*) FILTER (WHERE mu IS NULL OR NOT isfinite(mu)) AS non_finite_prediction_n,
        count(*) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_n,
        min(mu, 3) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_ex
    FROM (
        -- Plain left joins with the (small, distinct) known keys: correlated NOT EXISTS
        -- made DuckDB materialize every forecast row of the submission for its delim join.
        SELECT
            f.*,
            f.firm_id IS NOT NULL AND p.firm_id IS NULL AS unknown_firm,
            f.item_id IS NOT NULL AND i.item_id IS NULL AS unknown_item
        FROM {{ forecasts }} f
        LEFT JOIN (SELECT DISTINCT firm_id FROM panel.firms) p ON p.firm_id = f.firm_id
        LEFT JOIN (SELECT DISTINCT item_id FROM ref.items WHERE is_target) i
          ON i.item_id = f.item_id
        WHERE f.submission_id = getvariable('submission_id')
    )
)
SELECT flags.*, components.n_components, dup.excess AS duplicate_excess
FROM flags, components, dup;
