-- Resolution getvariable('resolution_id'): the cells of every round whose deadline has
-- passed (getvariable('now')), whose target quarter origin_q + h the panel reports for
-- the firm and item, and which hold no truth yet, into rounds.truth: actual = x_(t+h),
-- the reported value (the temp views resolve_values and resolve_firms: panel.values and
-- panel.firms of this warehouse's current build, or of another warehouse's build of a
-- later vintage, app/rounds/resolve.py) standardized with the ROUND's frozen z, k, mu
-- and sigma and clipped at +-6 (stored as FLOAT, as sql/build/140), beside the frozen
-- baseline. A cell is written once, by the first resolution that finds its value, and
-- never again: a later restatement (a later vintage) does not change it.
INSERT INTO rounds.truth
SELECT b.round_id, b.gvkey, b.item_id, h.horizon::TINYINT,
       panel.pf_standardize(v.v, p.k, o.z, p.mu, p.sigma)::FLOAT,
       b.baseline, getvariable('ingest_id'), getvariable('resolution_id')
FROM rounds.baselines AS b
JOIN rounds.rounds AS r USING (round_id)
JOIN rounds.origins AS o USING (round_id, gvkey)
JOIN rounds.params AS p USING (round_id, item_id)
CROSS JOIN range(1, 21) AS h(horizon)
JOIN resolve_firms AS f ON f.gvkey = b.gvkey
JOIN resolve_values AS v
  ON v.firm_id = f.firm_id AND v.q = r.origin_q + h.horizon AND v.item_id = b.item_id
WHERE r.deadline <= getvariable('now')
  AND v.v IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM rounds.truth AS t
      WHERE t.round_id = b.round_id AND t.gvkey = b.gvkey AND t.item_id = b.item_id
        AND t.horizon = h.horizon);
