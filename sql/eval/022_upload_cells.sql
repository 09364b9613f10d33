-- The temp view upload_cells: the rows of a file kept in the upload store (019's view
-- `submission_keyed`: a point file, or a single-family density file with a sigma; no
-- component column, not a quantile forecast) as the store keeps them: the packed cell key
-- (eval.cell_key; NULL where a key is null or invalid, which 034 counts), mu and sigma.
-- The store writes them to its file in ONE streaming pass over the upload (no staging
-- table); 034 checks that file, and a decoding view of it (store.STAGED: 020's columns,
-- component 0) is what 031 and 035 read. Nothing of the file goes into a table.
CREATE OR REPLACE TEMP VIEW upload_cells AS
SELECT
    CASE WHEN firm_id IS NOT NULL AND origin_q BETWEEN 0 AND 16383 AND item_id IS NOT NULL
              AND horizon IS NOT NULL
         THEN eval.cell_key(firm_id, origin_q, item_id, horizon) END AS cell,
    prediction AS mu,
    sigma
FROM submission_keyed;

-- The temp view upload_rows: the same rows with 020's columns and the constant component,
-- read only to explain a rejected file (030 over it names an origin outside 0..16383,
-- which upload_cells can only count as a null key).
CREATE OR REPLACE TEMP VIEW upload_rows AS
SELECT
    CAST(getvariable('submission_id') AS INTEGER) AS submission_id,
    firm_id,
    origin_q,
    item_id,
    horizon,
    CAST(0 AS SMALLINT) AS component,
    prediction AS mu,
    sigma
FROM submission_keyed;
