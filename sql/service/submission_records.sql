-- Submission records from eval.submissions: names, density family, size, checksum, the
-- build, timestamps and the metadata a submitter declared (description, code link,
-- training cutoff, leakage statement, uploader, and the model card: family, parameters,
-- compute hours and hardware, seeds). The raw metadata JSON stays private.
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
    json_extract_string(metadata, '$.uploaded_by')        AS uploaded_by,
    -- the model card (issue 49): the family a board groups an uploader's entries by (the
    -- name when none is declared), size, training compute and seeds
    coalesce(nullif(json_extract_string(metadata, '$.model_family'), ''), name)
                                                          AS model_family,
    TRY_CAST(json_extract(metadata, '$.parameters') AS BIGINT)      AS parameters,
    TRY_CAST(json_extract(metadata, '$.compute_hours') AS DOUBLE)   AS compute_hours,
    nullif(json_extract_string(metadata, '$.hardware'), '')         AS hardware,
    nullif(json_extract_string(metadata, '$.seeds'), '')            AS seeds
FROM eval.submissions s
WHERE NOT EXISTS (
    SELECT 1 FROM service.jobs j WHERE j.submission_id = s.submission_id AND j.status = 'failed'
)
