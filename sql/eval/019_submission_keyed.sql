-- The temp view `submission_keyed`: the rows of `submission_in` (the parquet file,
-- renamed columns) with their integer keys, as 020 and 021 store them: gvkey ->
-- panel.firms.firm_id, item name -> ref.items.item_id, origin as a quarter ordinal, an
-- integral horizon 1..20. A key that is unknown, null or invalid is NULL, so that the
-- checks (030, 033) see it and the caller rolls back and reports the file's problems
-- with 010. A view: each insert still reads the file in ONE streaming pass.
CREATE OR REPLACE TEMP VIEW submission_keyed AS
SELECT
    f.firm_id,
    s.origin_q,
    i.item_id,
    CASE WHEN s.horizon_num BETWEEN 1 AND 20 AND s.horizon_num = floor(s.horizon_num)
         THEN CAST(s.horizon_num AS TINYINT) END AS horizon,
    s.component,
    s.prediction,
    s.sigma
FROM submission_in s
LEFT JOIN panel.firms f ON f.gvkey = s.firm
LEFT JOIN ref.items i ON i.item = s.target AND i.is_target;
