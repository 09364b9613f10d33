-- The cells of round getvariable('round_id') as a submission file's keys (docs/rounds.md):
-- `firm` (gvkey), `target` (item), `origin` (the origin quarter's label), `horizon`
-- (1..20), one row per present_in_q0 item of each origin and horizon; a submission fills
-- `prediction` (and `sigma`) for any of them.
SELECT b.gvkey AS firm, i.item AS target, qlabel(r.origin_q) AS origin,
       h.horizon::TINYINT AS horizon
FROM rounds.baselines AS b
JOIN rounds.rounds AS r USING (round_id)
JOIN ref.items AS i USING (item_id)
CROSS JOIN range(1, 21) AS h(horizon)
WHERE b.round_id = getvariable('round_id')
ORDER BY b.gvkey, b.item_id, h.horizon;
