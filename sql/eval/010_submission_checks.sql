-- Problems of an uploaded submission, from the temp view `submission_in` (the parquet
-- file, columns renamed to firm, target, origin_q, origin_is_null, horizon_num,
-- prediction, sigma, component, quantile_level, row_nr): one row of counts and up to 3
-- example row numbers per problem. Keys are looked up in panel.firms (gvkey) and
-- ref.items. A quantile file (getvariable('is_quantile')) has levels instead of
-- components: a level must lie in (0, 1).
WITH src AS (
    SELECT s.*, f.firm_id AS firm_code, i.item_id AS item_code
    FROM submission_in s
    LEFT JOIN panel.firms f ON f.gvkey = s.firm
    LEFT JOIN ref.items i ON i.item = s.target AND i.is_target
),
flagged AS (
    SELECT
        row_nr,
        (firm IS NULL OR target IS NULL OR origin_is_null OR horizon_num IS NULL) AS null_key,
        (length(firm) > 64 OR length(target) > 64) AS huge_string,
        (firm IS NOT NULL AND length(firm) <= 64 AND firm_code IS NULL) AS unknown_firm,
        (target IS NOT NULL AND length(target) <= 64 AND item_code IS NULL) AS unknown_item,
        (NOT origin_is_null AND origin_q IS NULL) AS bad_origin,
        (horizon_num IS NOT NULL AND NOT (isfinite(horizon_num) AND horizon_num = floor(horizon_num)))
            AS non_integer_horizon,
        (isfinite(horizon_num) AND horizon_num = floor(horizon_num)
            AND NOT (horizon_num BETWEEN 1 AND 20)) AS horizon_out_of_range,
        (NOT getvariable('is_quantile')
            AND (component IS NULL OR NOT (component BETWEEN 0 AND 1023))) AS bad_component,
        (getvariable('is_quantile')
            AND (quantile_level IS NULL OR NOT (quantile_level > 0 AND quantile_level < 1)))
            AS bad_level,
        -- sigma is scored in 32-bit floats (published rules): the normal float range
        -- (app.scoring.submissions.checks.SIGMA_MIN, SIGMA_MAX)
        (getvariable('has_sigma') AND isfinite(prediction)
            AND NOT coalesce(sigma BETWEEN 1.1754943508222875e-38 AND 3.4028234663852886e38, false)) AS bad_sigma,
        (prediction IS NULL OR NOT isfinite(prediction)) AS non_finite_prediction,
        (isfinite(prediction) AND abs(prediction) > 60) AS huge_prediction
    FROM src
)
SELECT
    count(*) AS n_rows,
    count(*) FILTER (WHERE null_key) AS null_key_n,
    min(row_nr, 3) FILTER (WHERE null_key) AS null_key_ex,
    count(*) FILTER (WHERE huge_string) AS huge_string_n,
    min(row_nr, 3) FILTER (WHERE huge_string) AS huge_string_ex,
    count(*) FILTER (WHERE unknown_firm) AS unknown_firm_n,
    min(row_nr, 3) FILTER (WHERE unknown_firm) AS unknown_firm_ex,
    count(*) FILTER (WHERE unknown_item) AS unknown_item_n,
    min(row_nr, 3) FILTER (WHERE unknown_item) AS unknown_item_ex,
    count(*) FILTER (WHERE bad_origin) AS bad_origin_n,
    min(row_nr, 3) FILTER (WHERE bad_origin) AS bad_origin_ex,
    count(*) FILTER (WHERE non_integer_horizon) AS non_integer_horizon_n,
    min(row_nr, 3) FILTER (WHERE non_integer_horizon) AS non_integer_horizon_ex,
    count(*) FILTER (WHERE horizon_out_of_range) AS horizon_out_of_range_n,
    min(row_nr, 3) FILTER (WHERE horizon_out_of_range) AS horizon_out_of_range_ex,
    count(*) FILTER (WHERE bad_component) AS bad_component_n,
    min(row_nr, 3) FILTER (WHERE bad_component) AS bad_component_ex,
    count(*) FILTER (WHERE bad_level) AS bad_level_n,
    min(row_nr, 3) FILTER (WHERE bad_level) AS bad_level_ex,
    count(*) FILTER (WHERE bad_sigma) AS bad_sigma_n,
    min(row_nr, 3) FILTER (WHERE bad_sigma) AS bad_sigma_ex,
    count(*) FILTER (WHERE non_finite_prediction) AS non_finite_prediction_n,
    min(row_nr, 3) FILTER (WHERE non_finite_prediction) AS non_finite_prediction_ex,
    count(*) FILTER (WHERE huge_prediction) AS huge_prediction_n,
    min(row_nr, 3) FILTER (WHERE huge_prediction) AS huge_prediction_ex
FROM flagged;
