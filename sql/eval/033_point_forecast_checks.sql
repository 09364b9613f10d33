-- Problems of the rows of point submission getvariable('submission_id') in
-- eval.forecast_points (021), as the same one row 030 gives for eval.forecast_rows: a key
-- that 021 could not code or pack is a NULL key (the upload's file checks, 010, then say
-- which part was wrong), so unknown firms and items, origins, horizons and components
-- outside their ranges are counted there, and a point submission has no sigma; whether
-- any cell occurs twice (duplicate_excess, as in 030: 031 names the keys), and the
-- non-finite and huge predictions.
WITH dup AS (
    -- 030's exact check on the packed key: groups of (firm, origin, item pair), each row
    -- setting bit (item % 2) * 32 + horizon, i.e. key bits 10..15 (the component is 0).
    SELECT coalesce(sum(n - bit_count(bits)), 0) AS excess
    FROM (
        SELECT count(*) AS n, bit_or(CAST(1 AS BIGINT) << ((k >> 10) & 63)) AS bits
        FROM eval.forecast_points
        WHERE submission_id = getvariable('submission_id') AND k IS NOT NULL
        GROUP BY k >> 16
    )
)
SELECT
    count(*) AS n_rows,
    count(*) FILTER (WHERE k IS NULL) AS null_key_n,
    0::BIGINT AS unknown_firm_n,
    NULL::INTEGER[] AS unknown_firm_ex,
    0::BIGINT AS unknown_item_n,
    NULL::SMALLINT[] AS unknown_item_ex,
    0::BIGINT AS bad_origin_n,
    NULL::INTEGER[] AS bad_origin_ex,
    0::BIGINT AS horizon_out_of_range_n,
    NULL::TINYINT[] AS horizon_out_of_range_ex,
    0::BIGINT AS bad_component_n,
    0::BIGINT AS bad_sigma_n,
    NULL::DOUBLE[] AS bad_sigma_ex,
    0::BIGINT AS sigma_null_n,
    0::BIGINT AS sigma_present_n,
    count(*) FILTER (WHERE mu IS NULL OR NOT isfinite(mu)) AS non_finite_prediction_n,
    count(*) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_n,
    min(mu, 3) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_ex,
    CASE WHEN count(*) > 0 THEN 1 ELSE 0 END::BIGINT AS n_components,
    (SELECT excess FROM dup) AS duplicate_excess
FROM eval.forecast_points
WHERE submission_id = getvariable('submission_id');
