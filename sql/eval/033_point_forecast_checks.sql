-- Problems of the rows of point submission getvariable('submission_id') in
-- the identifier points (eval.forecast_points from 021, or 022's staged upload_points),
-- as the one row 030 gives for any submission, at a third of
-- its cost: 021 codes firms and items by joins with panel.firms and ref.items (an unknown
-- one is a NULL key) and horizons as 1..20 or NULL, so only null keys, origins outside
-- 0..16383, repeated cells (duplicate_excess, 030's exact check: 031 names the keys), and
-- non-finite or huge predictions can occur; a point submission has one component and no
-- sigma.
WITH dup AS (
    -- 030's mask check: groups of (firm, origin, item pair), each row setting bit
    -- (item % 2) * 32 + horizon; the component is 0
    SELECT coalesce(sum(n - bit_count(bits)), 0) AS excess
    FROM (
        SELECT count(*) AS n,
               bit_or(CAST(1 AS BIGINT) << CAST((item_id % 2) * 32 + horizon AS BIGINT)) AS bits
        FROM {{ points }}
        WHERE submission_id = getvariable('submission_id')
          AND firm_id IS NOT NULL AND origin_q BETWEEN 0 AND 16383 AND item_id BETWEEN 0 AND 127
          AND horizon BETWEEN 1 AND 20
        GROUP BY (CAST(firm_id AS BIGINT) * 16384 + origin_q) * 64 + item_id // 2
    )
)
SELECT
    count(*) AS n_rows,
    count(*) FILTER (WHERE firm_id IS NULL OR origin_q IS NULL OR item_id IS NULL
                            OR horizon IS NULL) AS null_key_n,
    0::BIGINT AS unknown_firm_n,
    NULL::INTEGER[] AS unknown_firm_ex,
    0::BIGINT AS unknown_item_n,
    NULL::SMALLINT[] AS unknown_item_ex,
    count(*) FILTER (WHERE NOT (origin_q BETWEEN 0 AND 16383)) AS bad_origin_n,
    min(origin_q, 3) FILTER (WHERE NOT (origin_q BETWEEN 0 AND 16383)) AS bad_origin_ex,
    0::BIGINT AS horizon_out_of_range_n,
    NULL::TINYINT[] AS horizon_out_of_range_ex,
    0::BIGINT AS bad_component_n,
    0::BIGINT AS bad_sigma_n,
    NULL::DOUBLE[] AS bad_sigma_ex,
    count(*) FILTER (WHERE isfinite(mu)) AS sigma_null_n,  -- (no sigma: every finite row)
    0::BIGINT AS sigma_present_n,
    count(*) FILTER (WHERE mu IS NULL OR NOT isfinite(mu)) AS non_finite_prediction_n,
    count(*) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_n,
    min(mu, 3) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_ex,
    CAST(count(*) > 0 AS BIGINT) AS n_components,
    (SELECT excess FROM dup) AS duplicate_excess
FROM {{ points }}
WHERE submission_id = getvariable('submission_id');
