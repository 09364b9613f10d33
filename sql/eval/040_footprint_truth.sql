-- The scoreable truth cells of a footprint (temp view fp_truth; a view, not a table: a
-- one-submission run reads it once, and materializing a 50M-cell footprint costs more
-- than the multi-submission steps 050 and 052 re-reading it): panel.truth cells of
-- split getvariable('split') with finite actual and baseline, inside footprint
-- getvariable('footprint_id'): its frozen cells (kind 'cells'), its origin sample (kind
-- 'origins'; frozen rows name their firm by gvkey, mapped to this build's firm id, or
-- by firm id when frozen before gvkeys were kept) and its predicate, the temp macro
-- fp_predicate(firm, origin, item, horizon) over gvkey, quarter-end date, item name and
-- horizon.
CREATE OR REPLACE TEMP VIEW fp_truth AS
SELECT
    eval.cell_key(t.firm_id, t.origin_q, t.item_id, t.horizon) AS cell,
    t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual, t.change
FROM panel.truth t
JOIN ref.items i ON i.item_id = t.item_id
JOIN panel.firms f ON f.firm_id = t.firm_id
WHERE t.split = getvariable('split')
  AND isfinite(t.actual) AND isfinite(t.baseline)
  AND fp_predicate(f.gvkey, qend(t.origin_q), i.item, t.horizon)
  AND (getvariable('fp_kind') <> 'origins'
       OR CAST(t.firm_id AS BIGINT) * 16384 + t.origin_q IN (
           SELECT CAST(CASE WHEN o.gvkey IS NULL THEN o.firm_id ELSE k.firm_id END AS BIGINT)
                  * 16384 + o.origin_q
           FROM eval.footprint_origins o
           LEFT JOIN panel.firms k ON k.gvkey = o.gvkey
           WHERE o.footprint_id = getvariable('footprint_id')))
  AND (getvariable('fp_kind') <> 'cells'
       OR eval.cell_key(t.firm_id, t.origin_q, t.item_id, t.horizon) IN (
           SELECT eval.cell_key(CASE WHEN c.gvkey IS NULL THEN c.firm_id ELSE k.firm_id END,
                                c.origin_q, c.item_id, c.horizon)
           FROM eval.footprint_cells c
           LEFT JOIN panel.firms k ON k.gvkey = c.gvkey
           WHERE c.footprint_id = getvariable('footprint_id')));
