-- The build's schemas and its record. `panel` holds the benchmark the build produces
-- from raw.* (sql/build), `stage` its intermediate tables, `meta` the build record:
-- one meta.builds row per `proforma build` and one meta.build_steps row per SQL step
-- it ran (normalized checksum, rows written, elapsed time).
CREATE SCHEMA IF NOT EXISTS panel;
CREATE SCHEMA IF NOT EXISTS stage;
CREATE SCHEMA IF NOT EXISTS meta;

CREATE SEQUENCE meta.build_id_seq START 1;

CREATE TABLE meta.builds (
    build_id        INTEGER PRIMARY KEY DEFAULT nextval('meta.build_id_seq'),
    status          VARCHAR NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    sql_checksum    VARCHAR NOT NULL,   -- app.sqlfiles.folder_checksum('build')
    parameters      JSON NOT NULL,
    reg_stats       VARCHAR NOT NULL,   -- 'estimate' or the pinned parquet's path
    reg_stats_checksum VARCHAR,         -- sha256 of the pinned parquet file
    raw_ingest_id   INTEGER,            -- latest raw.ingests row at build time
    row_counts      JSON,               -- {table: rows} and {table: {split: rows}}
    error           VARCHAR,
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP,
    elapsed_s       DOUBLE
);

CREATE TABLE meta.build_steps (
    build_id    INTEGER NOT NULL,
    step_no     SMALLINT NOT NULL,
    name        VARCHAR NOT NULL,
    checksum    VARCHAR NOT NULL,       -- app.sqlfiles.checksum of the step file
    purpose     VARCHAR NOT NULL,       -- the step's opening comment
    row_counts  JSON,                   -- rows of the tables the step created
    elapsed_s   DOUBLE NOT NULL,
    PRIMARY KEY (build_id, step_no)
);
