-- The noise an upload's public numbers carry (issue 47; app/read/noise_budget.py,
-- docs/service.md, "The truth: threat model"): fixed when the upload is admitted, from
-- the user's uploads of the seven days before it (both doors: a round file is an upload)
-- and the number of footprints it may be public on (PROFORMA_UPLOAD_FOOTPRINTS then: the
-- first that many footprint names, in the order they were first made). Never changed: a
-- number drawn again with another scale would give its noise away.
CREATE TABLE service.disclosure_grants (
    job_id           INTEGER PRIMARY KEY,
    user_id          INTEGER NOT NULL,
    weekly_ordinal   INTEGER NOT NULL,
    week_uploads     INTEGER NOT NULL,
    footprints       INTEGER NOT NULL,
    sigma            DOUBLE NOT NULL CHECK (sigma > 0),
    granted_at       TIMESTAMP NOT NULL
);

-- Each upload's grant by door: a static submission through its job, a round entry
-- through the job named in its metadata (the first job, should two name it).
CREATE VIEW service.upload_noise AS
SELECT 'static' AS door, j.submission_id, arg_min(g.sigma, j.job_id) AS sigma,
       arg_min(g.footprints, j.job_id) AS footprints
FROM service.jobs j
JOIN service.disclosure_grants g USING (job_id)
WHERE j.submission_id IS NOT NULL AND j.round_name IS NULL
GROUP BY j.submission_id
UNION ALL
SELECT 'round' AS door, s.submission_id, arg_min(g.sigma, g.job_id),
       arg_min(g.footprints, g.job_id)
FROM rounds.submissions s
JOIN service.disclosure_grants g
  ON g.job_id = TRY_CAST(json_extract_string(s.metadata, '$.service_job_id') AS INTEGER)
GROUP BY s.submission_id;

-- Each footprint's place among the names (1 = the first name ever made): an upload is
-- public on the footprints whose place is within its grant's `footprints`.
CREATE VIEW service.footprint_places AS
SELECT f.footprint_id, p.place
FROM eval.footprints f
JOIN (SELECT name, row_number() OVER (ORDER BY min(footprint_id)) AS place
      FROM eval.footprints GROUP BY name) p USING (name);
