-- Public submission records from eval.submissions: names, density family, size,
-- checksum and the declared metadata (description, code link, training cutoff,
-- leakage statement, uploader). The raw metadata JSON stays private.
CREATE TABLE pub.submissions AS
SELECT
    submission_id,
    name,
    source,
    family,
    df,
    has_sigma,
    n_components,
    cells,
    checksum,
    build_id,
    json_extract_string(metadata, '$.description')        AS description,
    json_extract_string(metadata, '$.code_url')           AS code_url,
    json_extract_string(metadata, '$.training_cutoff')    AS training_cutoff,
    json_extract_string(metadata, '$.leakage_statement')  AS leakage_statement,
    json_extract_string(metadata, '$.uploaded_by')        AS uploaded_by,
    created_at
FROM eval.submissions
ORDER BY submission_id;
