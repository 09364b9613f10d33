-- A submission's forecasts as the published submission file (SUBMISSION.md of the
-- published package): the rows of submission getvariable('submission_id') in
-- {{ forecasts }} (eval.forecasts, or the view over its stored upload file) with their
-- keys at the edge again: `firm` (the gvkey), `target` (the item), `origin` (the origin
-- quarter's last day as a TIMESTAMP, as the package's files stamp it), `horizon`,
-- `prediction` (the standardized level, the DOUBLE this service scores: the package's own
-- writer downcasts to float32, which moves a density score wherever sigma is small, and
-- reads a double the same), then `sigma`
-- where the submission carries one (getvariable('has_sigma')), and where it has several
-- members per cell `component` (a mixture) or `quantile_level` (a quantile forecast:
-- component k is level k + 1 of getvariable('quantile_levels')). The caller keeps the
-- columns that apply. Rows come in (firm, target, origin, horizon, component) order.
SELECT
    p.gvkey AS firm,
    i.item AS target,
    qend(f.origin_q)::TIMESTAMP AS origin,
    CAST(f.horizon AS BIGINT) AS horizon,
    CAST(f.mu AS DOUBLE) AS prediction,
    CAST(f.sigma AS DOUBLE) AS sigma,
    CAST(f.component AS INTEGER) AS component,
    CAST(getvariable('quantile_levels')[f.component + 1] AS DOUBLE) AS quantile_level
FROM {{ forecasts }} AS f
JOIN panel.firms AS p USING (firm_id)
JOIN ref.items AS i USING (item_id)
WHERE f.submission_id = getvariable('submission_id')
ORDER BY p.gvkey, i.item, f.origin_q, f.horizon, f.component
