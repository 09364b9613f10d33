-- The tuple input of round getvariable('round_id') in the published tuple layout
-- (app/export.py): `firm_id` (the release's integer id, firm_id - 1 of the build at the
-- open), `account_id` (ref.items in name order, the scale pseudo-item included),
-- `quarter` (quarters since 1969Q4), `value` (as reported) and `industry_id` (ff48 - 1)
-- of every value the round's origins report in the window t-11..t of its origin quarter t.
WITH accounts AS (
    SELECT item_id, (row_number() OVER (ORDER BY item) - 1)::BIGINT AS account_id
    FROM ref.items
)
SELECT (v.firm_id - 1)::BIGINT AS firm_id, a.account_id,
       (v.q - (1969 * 4 + 3))::BIGINT AS quarter, v.v AS value,
       (f.ff48 - 1)::BIGINT AS industry_id
FROM rounds.origins AS o
JOIN rounds.rounds AS r USING (round_id)
JOIN panel.firms AS f ON f.gvkey = o.gvkey
JOIN panel.values AS v
  ON v.firm_id = f.firm_id AND v.q BETWEEN r.origin_q - 11 AND r.origin_q
JOIN accounts AS a ON a.item_id = v.item_id
WHERE o.round_id = getvariable('round_id')
ORDER BY a.account_id, v.firm_id, v.q;
