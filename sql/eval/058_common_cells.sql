-- The common sample of a score run (temp table common_cells) from fp_cells (the
-- footprint's scoreable cells), run_subs (the submissions entering the run, with
-- gaps_stored) and their stored gaps (eval.sample_gaps of footprint
-- getvariable('footprint_id'), step 055): the footprint cells that EVERY entering
-- submission scores (eval.cell_scores holds exactly the cells a submission predicts
-- validly under the rule set). Submissions whose gaps are not stored (they predict less
-- than half the footprint, or a footprint is being frozen from them) are intersected
-- through their cells instead: eval.cell_scores, and run_stored_cells (temp table) for
-- uploads kept in the upload store, whose cells are in no table. Only the submissions
-- that shape the sample (run_subs.shapes_sample: not uploads) take cells out of it: an
-- upload is scored on its own cells of the sample (docs/service.md, "The truth: threat
-- model": one upload's gap must not move the in-house models' exact numbers).
CREATE OR REPLACE TEMP TABLE common_cells AS
WITH gaps AS (
    SELECT DISTINCT g.cell
    FROM eval.sample_gaps g
    JOIN run_subs r ON r.submission_id = g.submission_id AND r.gaps_stored AND r.shapes_sample
    WHERE g.footprint_id = getvariable('footprint_id')
),
partial AS (
    SELECT c.cell
    FROM (SELECT submission_id, cell FROM eval.cell_scores
          UNION ALL
          SELECT submission_id, cell FROM run_stored_cells) c
    JOIN run_subs r ON r.submission_id = c.submission_id AND NOT r.gaps_stored
     AND r.shapes_sample
    SEMI JOIN fp_cells f ON f.cell = c.cell
    GROUP BY c.cell
    HAVING count(*) = (SELECT count(*) FROM run_subs WHERE NOT gaps_stored AND shapes_sample)
)
SELECT f.*
FROM fp_cells f
ANTI JOIN gaps g ON g.cell = f.cell
WHERE NOT EXISTS (SELECT 1 FROM run_subs WHERE NOT gaps_stored AND shapes_sample)
   OR f.cell IN (SELECT cell FROM partial);
