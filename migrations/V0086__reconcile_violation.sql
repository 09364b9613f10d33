-- The identity violation of a reconciliation's own dollar statements (before they go back
-- through the standardized space, whose clip at +-6 can undo some of the projection):
-- instances enforced and the median and largest |sum s_j v_j| / sum |v_j|, test origins
-- (sql/reconcile/030_projection_violation.sql; docs/report.md).
ALTER TABLE eval.reconciliations ADD COLUMN instances BIGINT;
ALTER TABLE eval.reconciliations ADD COLUMN median_violation DOUBLE;
ALTER TABLE eval.reconciliations ADD COLUMN max_violation DOUBLE;
