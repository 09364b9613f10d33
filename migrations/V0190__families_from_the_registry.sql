-- A submission's family is checked against the family registry (contracts/families.py:
-- proforma.app.scoring.submissions.checks.check_family, on every door and on the one
-- insert of eval.submissions), not by a CHECK listing the names: a new density family
-- is one entry of the registry, no migration. eval.submissions is rebuilt because DuckDB
-- cannot drop a CHECK constraint; its columns and rows are those of V0065.
CREATE TABLE eval.submissions_v190 (
    submission_id  INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,           -- upload | model | reference
    family         VARCHAR NOT NULL,           -- a density family of the registry, or quantile
    df             DOUBLE,                     -- Student-t degrees of freedom
    has_sigma      BOOLEAN NOT NULL,
    n_components   INTEGER NOT NULL,           -- 1 = single, K > 1 = mixture; quantile: the grid's size
    rows           BIGINT NOT NULL,
    cells          BIGINT NOT NULL,
    checksum       VARCHAR NOT NULL,           -- sha256 of the file or of the Arrow batches
    build_id       INTEGER,                    -- meta.builds row current at ingest (NULL if none)
    warnings       JSON,
    metadata       JSON,
    created_at     TIMESTAMP NOT NULL,
    retired_at     TIMESTAMP,                  -- set when a newer submission took its name
    quantile_levels DOUBLE[]                   -- family quantile: the levels, ascending; component k is level k + 1
);
INSERT INTO eval.submissions_v190 BY NAME SELECT * FROM eval.submissions;
DROP TABLE eval.submissions;
ALTER TABLE eval.submissions_v190 RENAME TO submissions;
