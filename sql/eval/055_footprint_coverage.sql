-- One submission's coverage of a footprint under the current scoring context, from
-- fp_cells (the footprint's scoreable cells, temp table) and the submission's
-- eval.cell_scores: a row of eval.footprint_coverage (footprint cells, cells it scores)
-- and, when it scores at least getvariable('gaps_min_share') of them, its gaps (the
-- footprint cells it does not score) in eval.sample_gaps. A run's common sample is the
-- footprint minus the gaps of its submissions, so it never reads their cells.
-- One anti join: the footprint cells the submission does not score. Its predicted cells
-- are the rest (a semi join for the count and an anti join for the gaps joined the
-- footprint with the submission's cells twice).
CREATE OR REPLACE TEMP TABLE sub_gaps AS
SELECT f.cell
FROM fp_cells f
ANTI JOIN (SELECT cell FROM eval.cell_scores
           WHERE submission_id = getvariable('submission_id')) c ON c.cell = f.cell;

CREATE OR REPLACE TEMP TABLE sub_coverage AS
SELECT footprint_cells, predicted_cells,
       footprint_cells > 0
       AND predicted_cells >= getvariable('gaps_min_share') * footprint_cells AS gaps_stored
FROM (SELECT footprint_cells, footprint_cells - gap_cells AS predicted_cells
      FROM (SELECT (SELECT count(*) FROM fp_cells) AS footprint_cells,
                   (SELECT count(*) FROM sub_gaps) AS gap_cells));

INSERT INTO eval.footprint_coverage
SELECT getvariable('footprint_id'), getvariable('submission_id'), getvariable('build_id'),
       getvariable('eval_sql_version'), getvariable('rules'), footprint_cells, predicted_cells,
       gaps_stored, now()::TIMESTAMP
FROM sub_coverage;

INSERT INTO eval.sample_gaps
SELECT getvariable('footprint_id'), getvariable('submission_id'), g.cell
FROM sub_gaps g
WHERE (SELECT gaps_stored FROM sub_coverage);

DROP TABLE sub_gaps;
