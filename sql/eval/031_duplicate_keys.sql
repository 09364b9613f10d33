-- The (cell, component) keys of submission getvariable('submission_id') that occur more
-- than once in its forecasts (the identifier forecasts: eval.forecasts, or 022's staged
-- upload_points), counted, and the first 3 as packed keys (eval.cell_key *
-- 1024 + component), among the rows 030's duplicate check reads. Run only when 030 found
-- duplicate rows: it hashes every key.
SELECT count(*) AS duplicate_key_n, min(k, 3) AS duplicate_key_ex
FROM (
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) * 1024 + component AS k
    FROM {{ forecasts }}
    WHERE submission_id = getvariable('submission_id')
      AND firm_id IS NOT NULL AND origin_q BETWEEN 0 AND 16383 AND item_id BETWEEN 0 AND 127
      AND horizon BETWEEN 1 AND 20 AND component BETWEEN 0 AND 1023
    GROUP BY k
    HAVING count(*) > 1
);
