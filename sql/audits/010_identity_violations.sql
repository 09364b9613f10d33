-- Identity violations: the violating identity instances of the reported data, from
-- panel.values (values as reported, after YTD conversion and computed items), ref.identities
-- and panel.firms. An instance is (firm, quarter, identity) with EVERY member item
-- reported; its residual is the signed sum of its terms (zero when the identity holds).
-- It violates when |residual| > max(identity_abs_tol, identity_rel_tol * max |term|).
SELECT f.gvkey, qlabel(v.q) AS quarter, i.identity, i.statement,
       count(*)::INTEGER AS n_terms,
       sum(i.sign * v.v) AS residual,
       max(abs(v.v)) AS max_abs_term,
       abs(sum(i.sign * v.v)) / nullif(max(abs(v.v)), 0) AS rel_residual
FROM panel.values AS v
JOIN ref.identities AS i USING (item_id)
JOIN panel.firms AS f USING (firm_id)
GROUP BY f.gvkey, v.q, i.identity, i.statement
HAVING count(*) = (SELECT count(*) FROM ref.identities AS m WHERE m.identity = i.identity)
   AND abs(sum(i.sign * v.v)) > greatest(getvariable('identity_abs_tol'),
                                         getvariable('identity_rel_tol') * max(abs(v.v)))
ORDER BY i.identity, f.gvkey, v.q;
