-- Identity residuals on syn_panel (010): for each of the 26 identities of ref.identities,
-- the firm-quarters where every member item is reported, the largest residual relative
-- to the largest member magnitude, and how many exceed 1e-9 of it (should be none).
WITH members AS (
    SELECT identity, any_value(statement) AS statement, count(*) AS n_terms
    FROM ref.identities GROUP BY identity
),
per AS (
    SELECT i.identity, v.gvkey, v.q, count(*) AS n, sum(i.sign * v.v) AS resid, max(abs(v.v)) AS scale
    FROM syn_panel AS v
    JOIN ref.identities AS i ON i.item_id = v.item_id
    GROUP BY i.identity, v.gvkey, v.q
)
SELECT
    m.identity,
    m.statement,
    m.n_terms,
    count(p.identity) AS evaluated,
    coalesce(max(abs(p.resid) / greatest(p.scale, 1e-6)), 0.0) AS max_rel_residual,
    count(*) FILTER (WHERE abs(p.resid) > 1e-9 * greatest(p.scale, 1e-6)) AS violations
FROM members AS m
LEFT JOIN per AS p ON p.identity = m.identity AND p.n = m.n_terms
GROUP BY m.identity, m.statement, m.n_terms
ORDER BY m.identity;
