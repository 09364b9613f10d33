-- The common sample (temp table common_cells) from fp_truth, run_valid (each candidate
-- submission's finitely predicted footprint cells, step 050) and run_subs (the
-- submissions that enter the run): the footprint cells that EVERY entering submission
-- predicts finitely.
CREATE OR REPLACE TEMP TABLE common_cells AS
SELECT t.*
FROM fp_truth t
SEMI JOIN (
    SELECT cell FROM run_valid
    WHERE submission_id IN (SELECT submission_id FROM run_subs)
    GROUP BY cell
    HAVING count(*) = (SELECT count(*) FROM run_subs)
) c ON c.cell = t.cell;
