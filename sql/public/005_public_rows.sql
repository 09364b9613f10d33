-- The public rows that depend on one (run, submission) only: each scored submission's
-- public metric rows and PIT bins, kept once per (from_run, submission), the run that
-- scored them, in the publisher's own file (catalog `pubcache`, schema `store`: a private
-- file beside the snapshot, app/read/snapshot.py) and extended at each publication with
-- the rows of the submissions scored since the last one. Each publication starts its
-- snapshot as a copy of this file: the board's rows are written once, not at every upload,
-- and the snapshot's views `metrics` and `pit` (040) join them to the runs that reference
-- them. So everything kept here is public as it stands: an upload's numbers coarsened,
-- aggregates over fewer than getvariable('public_min_cells') cells left out (the file's
-- name follows that setting too), only the rows of the (from_run, submission)s that some
-- published run references.
-- The runs published (the history is bounded: the latest
-- getvariable('public_history_runs') runs of each footprint) and, on each current run,
-- the members whose per-item detail is published (the in-house submissions and the top
-- getvariable('public_detail_top') of each track's ranking: R2, MAE, CRPS); 040 uses both.
-- A footprint's current run is its board (eval.board_runs: its newest run of the whole
-- current membership, whatever scored last), published even when runs of named
-- submissions came after it.
CREATE OR REPLACE TEMP TABLE public_runs AS
SELECT score_run_id, score_run_id IN (SELECT score_run_id FROM eval.board_runs) AS is_current
FROM (SELECT score_run_id,
             row_number() OVER (PARTITION BY footprint_name ORDER BY score_run_id DESC) AS k
      FROM eval.score_runs)
WHERE k <= getvariable('public_history_runs')
   OR score_run_id IN (SELECT score_run_id FROM eval.board_runs);

-- The uploads' noise as the slot metric_public reads it (app/read/disclosure.py), by
-- footprint and upload: the grant's sigma (service.upload_noise; the fallback without
-- one) and whether the footprint is past those the grant counted
-- (service.footprint_places).
CREATE OR REPLACE TEMP TABLE public_upload_noise AS
SELECT fp.footprint_id, s.submission_id,
       coalesce(u.sigma, getvariable('disclosure_fallback_sigma')) AS noise_sigma,
       coalesce(fp.place > coalesce(u.footprints,
                                    getvariable('disclosure_fallback_footprints')), TRUE)
           AS upload_hidden
FROM service.footprint_places fp
CROSS JOIN eval.submissions s
LEFT JOIN service.upload_noise u ON u.door = 'static' AND u.submission_id = s.submission_id
WHERE s.source = 'upload';

-- (ranked by the public numbers: an upload's exact ones, compared with the others', would
-- tell which side of a known number its own lies)
CREATE OR REPLACE TEMP TABLE public_detail AS
WITH g AS (
    SELECT m.*, s.source, s.source = 'upload' AS is_upload, TRUE AS is_headline,
           n.noise_sigma, n.upload_hidden, m.submission_id || '/global////' AS label
    FROM eval.metrics m
    JOIN public_runs r USING (score_run_id)
    JOIN eval.score_runs sr USING (score_run_id)
    JOIN eval.submissions s USING (submission_id)
    LEFT JOIN public_upload_noise n
      ON n.footprint_id = sr.footprint_id AND n.submission_id = m.submission_id
    WHERE r.is_current AND m.level = 'global'
),
p AS (
    SELECT score_run_id, submission_id, source, {{ metric_public }}
    FROM g
)
SELECT score_run_id, submission_id
FROM (SELECT score_run_id, submission_id, source,
             row_number() OVER (PARTITION BY score_run_id
                                ORDER BY r2 DESC NULLS LAST, submission_id) AS by_r2,
             row_number() OVER (PARTITION BY score_run_id
                                ORDER BY mae NULLS LAST, submission_id) AS by_mae,
             row_number() OVER (PARTITION BY score_run_id
                                ORDER BY crps NULLS LAST, submission_id) AS by_crps
      FROM p)
WHERE source <> 'upload' OR least(by_r2, by_mae, by_crps) <= getvariable('public_detail_top');

CREATE SCHEMA IF NOT EXISTS pubcache.store;

-- An upload's truth-derived numbers carry keyed noise (app/read/disclosure.py: standard
-- deviation sigma * sensitivity / n, sigma the upload's grant, service.upload_noise; R2
-- from the noised MSE; coverage shares at the headline levels only; NLL and z2 withheld;
-- nothing on a footprint past the first ones its grant counted), so that no combination of
-- public numbers reads a truth value back; other submissions' numbers are exact.
-- pf_coarsen is the publisher's macro.
-- Each metric's column is written as its definition says (contracts/metrics.py:
-- disclosure and sensitivity; the slot metric_public).
-- Each row's public values depend on that row only, and a run references the rows of
-- the submissions it reuses (eval.run_results: from_run), so they are computed once per
-- (from_run, submission) (the file is named after this file's text, the disclosure key
-- and the minimum cells: any change starts a new one) and each publication computes only
-- the rows of the submissions scored since the last one: a publication costs no
-- coarsening per row of the whole board.
-- Kept: every (from_run, submission)'s headline rows (global, horizon) and the finer rows
-- of those in public_detail only, so that the store stays the size of what is published.
CREATE OR REPLACE TEMP TABLE public_metric_refs AS
SELECT DISTINCT r.from_run, r.submission_id, x.part
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
LEFT JOIN public_detail d USING (score_run_id, submission_id)
CROSS JOIN (VALUES ('headline'), ('detail')) x(part)
WHERE x.part = 'headline' OR d.submission_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS pubcache.store.metric_sets (
    from_run BIGINT, submission_id BIGINT, part VARCHAR
);

CREATE OR REPLACE TEMP TABLE public_metric_todo AS
SELECT from_run, submission_id, part FROM public_metric_refs
EXCEPT SELECT from_run, submission_id, part FROM pubcache.store.metric_sets;

CREATE OR REPLACE TEMP TABLE public_metric_new AS
WITH m AS (
    SELECT m.*, t.part, s.name AS model, s.source = 'upload' AS is_upload,
           m.level IN ('global', 'horizon') AS is_headline, i.item,
           n.noise_sigma, n.upload_hidden,
           coalesce(m.statement, i.statement) AS item_statement,
           m.submission_id || '/' || m.level || '/' || coalesce(CAST(m.horizon AS VARCHAR), '')
           || '/' || coalesce(i.item, '') || '/' || coalesce(m.statement, '') || '/' AS label
    FROM eval.metric_rows m
    JOIN public_metric_todo t
      ON t.from_run = m.score_run_id AND t.submission_id = m.submission_id
     AND t.part = CASE WHEN m.level IN ('global', 'horizon') THEN 'headline' ELSE 'detail' END
    JOIN eval.submissions s ON s.submission_id = m.submission_id
    JOIN eval.score_runs r ON r.score_run_id = m.score_run_id
    LEFT JOIN public_upload_noise n
      ON n.footprint_id = r.footprint_id AND n.submission_id = m.submission_id
    LEFT JOIN ref.items i ON i.item_id = m.item_id
    WHERE m.n >= getvariable('public_min_cells')
)
SELECT part, item_id, score_run_id, submission_id, model, level, horizon, item,
       item_statement AS statement, n,
       {{ metric_public }}
FROM m;

CREATE TABLE IF NOT EXISTS pubcache.store.metrics AS FROM public_metric_new LIMIT 0;
-- (idempotent: rows of a publication that died before recording its sets go first)
DELETE FROM pubcache.store.metrics c USING public_metric_todo t
WHERE c.score_run_id = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;
INSERT INTO pubcache.store.metrics BY NAME FROM public_metric_new;
INSERT INTO pubcache.store.metric_sets SELECT from_run, submission_id, part FROM public_metric_todo;
-- rows the snapshot no longer takes (a submission out of the top, a sample that changed)
-- leave the store
CREATE OR REPLACE TEMP TABLE public_metric_stale AS
SELECT from_run, submission_id, part FROM pubcache.store.metric_sets
EXCEPT SELECT from_run, submission_id, part FROM public_metric_refs;
DELETE FROM pubcache.store.metrics c USING public_metric_stale t
WHERE c.score_run_id = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;
DELETE FROM pubcache.store.metric_sets c USING public_metric_stale t
WHERE c.from_run = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;

-- PIT histograms: an upload's are withheld (each of its 20 shares would be a channel of
-- its own; its coverage shares tell its calibration).
-- Like the metrics, a (from_run, submission)'s public bins depend on its own rows only, so
-- they are computed once and shown for every run that references them. The current run
-- of each footprint only (040).
CREATE OR REPLACE TEMP TABLE public_pit_refs AS
SELECT DISTINCT r.from_run, r.submission_id
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
WHERE p.is_current;

CREATE TABLE IF NOT EXISTS pubcache.store.pit (
    from_run INTEGER, submission_id INTEGER, bin TINYINT, n BIGINT, share DOUBLE
);

-- (a submission without PIT bins, a point forecast, is looked for again each time: no rows)
CREATE OR REPLACE TEMP TABLE public_pit_todo AS
SELECT from_run, submission_id FROM public_pit_refs
EXCEPT SELECT DISTINCT from_run, submission_id FROM pubcache.store.pit;

-- (idempotent: the rows of a publication that died half-way go first)
DELETE FROM pubcache.store.pit c USING public_pit_todo t
WHERE c.from_run = t.from_run AND c.submission_id = t.submission_id;
INSERT INTO pubcache.store.pit
SELECT p.score_run_id, p.submission_id, p.bin, p.n, p.share
FROM eval.pit_rows p
JOIN public_pit_todo t ON t.from_run = p.score_run_id AND t.submission_id = p.submission_id
JOIN eval.submissions s ON s.submission_id = p.submission_id
WHERE s.source <> 'upload';

DELETE FROM pubcache.store.pit c
WHERE NOT EXISTS (SELECT 1 FROM public_pit_refs r
                  WHERE r.from_run = c.from_run AND r.submission_id = c.submission_id);
