-- Problems of an upload written to the upload store (the identifier stored: a relation
-- of (cell, mu, sigma) over its file, from 022), as the one row 030 gives for any
-- submission, without decoding a key or joining a table: 019 coded firms and items by
-- joins (an unknown one is a NULL key) and horizons as 1..20 or NULL, and 022 made the
-- cell key NULL wherever a key is null or an origin outside 0..16383, so only null keys,
-- repeated cells (duplicate_excess: 030's exact mask check on the key's bits; 031 names
-- the keys), bad or missing sigmas and non-finite or huge predictions can occur. A point
-- file's sigma is NULL throughout. The file holds one component. Also the origin range of
-- its finite predictions (the store records it), from the key's bits.
WITH dup AS (
    -- cell >> 6 is (firm, origin, item pair); cell & 63 is (item % 2) * 32 + horizon,
    -- the bit 030 sets: a group has a repeated key exactly when it has more rows than bits
    SELECT coalesce(sum(n - bit_count(bits)), 0) AS excess
    FROM (
        SELECT count(*) AS n, bit_or(CAST(1 AS BIGINT) << (cell & 63)) AS bits
        FROM {{ stored }}
        WHERE cell IS NOT NULL
        GROUP BY cell >> 6
    )
)
SELECT
    count(*) AS n_rows,
    count(*) FILTER (WHERE cell IS NULL) AS null_key_n,
    0::BIGINT AS unknown_firm_n,
    NULL::INTEGER[] AS unknown_firm_ex,
    0::BIGINT AS unknown_item_n,
    NULL::SMALLINT[] AS unknown_item_ex,
    0::BIGINT AS bad_origin_n,
    NULL::INTEGER[] AS bad_origin_ex,
    0::BIGINT AS horizon_out_of_range_n,
    NULL::TINYINT[] AS horizon_out_of_range_ex,
    0::BIGINT AS bad_component_n,
    -- (the normal range of the 32-bit floats sigma is scored in; 010 and 030 hold the same)
    count(*) FILTER (WHERE isfinite(mu) AND sigma IS NOT NULL
                            AND NOT (sigma BETWEEN 1.1754943508222875e-38 AND 3.4028234663852886e38)) AS bad_sigma_n,
    min(sigma, 3) FILTER (WHERE isfinite(mu) AND sigma IS NOT NULL
                               AND NOT (sigma BETWEEN 1.1754943508222875e-38 AND 3.4028234663852886e38)) AS bad_sigma_ex,
    count(*) FILTER (WHERE isfinite(mu) AND sigma IS NULL) AS sigma_null_n,
    count(sigma) AS sigma_present_n,
    count(*) FILTER (WHERE mu IS NULL OR NOT isfinite(mu)) AS non_finite_prediction_n,
    count(*) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_n,
    min(mu, 3) FILTER (WHERE isfinite(mu) AND abs(mu) > 60) AS huge_prediction_ex,
    CAST(count(*) > 0 AS BIGINT) AS n_components,
    CAST(min((cell >> 12) & 16383) FILTER (WHERE isfinite(mu)) AS INTEGER) AS first_origin_q,
    CAST(max((cell >> 12) & 16383) FILTER (WHERE isfinite(mu)) AS INTEGER) AS last_origin_q,
    (SELECT excess FROM dup) AS duplicate_excess
FROM {{ stored }};
