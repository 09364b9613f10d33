-- Identity summary: per identity, from panel.values and ref.identities, the complete
-- instances (firm-quarters reporting every member item), how many violate (same rule as
-- 010_identity_violations: |residual| > max(abs_tol, rel_tol * max |term|)), their share,
-- and the median relative residual of the violations.
WITH inst AS (
    SELECT i.identity, v.firm_id, v.q,
           count(*) AS n_terms,
           abs(sum(i.sign * v.v)) AS abs_residual,
           max(abs(v.v)) AS max_abs_term
    FROM panel.values AS v
    JOIN ref.identities AS i USING (item_id)
    GROUP BY i.identity, v.firm_id, v.q
),
sized AS (
    SELECT identity, any_value(statement) AS statement, count(*) AS n_terms
    FROM ref.identities GROUP BY identity
),
flagged AS (
    SELECT inst.*, inst.abs_residual > greatest(getvariable('identity_abs_tol'),
                                           getvariable('identity_rel_tol') * max_abs_term) AS bad
    FROM inst JOIN sized AS z ON z.identity = inst.identity AND z.n_terms = inst.n_terms
)
SELECT s.identity, s.statement,
       count(f.identity)::BIGINT AS instances,
       count(*) FILTER (WHERE f.bad)::BIGINT AS violations,
       count(*) FILTER (WHERE f.bad) / nullif(count(f.identity), 0) AS violation_share,
       median(f.abs_residual / nullif(f.max_abs_term, 0)) FILTER (WHERE f.bad) AS median_rel_residual
FROM sized AS s
LEFT JOIN flagged AS f USING (identity)
GROUP BY s.identity, s.statement
ORDER BY s.identity;
