-- Submission records from eval.submissions: names, density family, size, checksum, the
-- build, timestamps and the metadata a submitter declared (description, code link,
-- training cutoff, leakage statement, uploader). The raw metadata JSON stays private.
-- The API lists these rows; sql/public/020_submissions.sql publishes them without the
-- row count and the retirement time. A submission whose upload job failed (it could not
-- be scored, and was retired with its forecasts) is not a record: it is left out.
SELECT
    submission_id,
    name,
    source,
    family,
    df,
    has_sigma,
    n_components,
    rows,
    cells,
    checksum,
    build_id,
    created_at,
    retired_at,
    json_extract_string(metadata, '$.description')        AS description,
    json_extract_string(metadata, '$.code_url')           AS code_url,
    json_extract_string(metadata, '$.training_cutoff')    AS training_cutoff,
    json_extract_string(metadata, '$.leakage_statement')  AS leakage_statement,
    json_extract_string(metadata, '$.uploaded_by')        AS uploaded_by
FROM eval.submissions s
WHERE NOT EXISTS (
    SELECT 1 FROM service.jobs j WHERE j.submission_id = s.submission_id AND j.status = 'failed'
)
