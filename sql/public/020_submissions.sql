-- Public submission records from the temp view submission_records (made by the
-- publisher from sql/service/submission_records.sql over eval.submissions): names,
-- density family, size, checksum and the declared metadata (description, code link,
-- training cutoff, leakage statement, uploader, the model card), without the row count and the
-- retirement time. The raw metadata JSON stays private.
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
    description,
    code_url,
    training_cutoff,
    leakage_statement,
    uploaded_by,
    model_family,
    parameters,
    compute_hours,
    hardware,
    seeds,
    created_at
FROM submission_records
ORDER BY submission_id;
