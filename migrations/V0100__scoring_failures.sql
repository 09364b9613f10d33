-- Scoring failures, kept apart so that one submission can never stop the others
-- (docs/service.md, "Scoring failures"): eval.submission_failures records a submission
-- whose cell scores could not be computed in a scoring context (build, sql/eval version,
-- rule set); score runs of that context leave it out, a new context tries it again. The
-- service records the outcome of each scoring pass of its worker (service.scoring_passes)
-- so that /api/v1/health can say `degraded` while scoring fails.
CREATE TABLE eval.submission_failures (
    submission_id     INTEGER NOT NULL,
    build_id          INTEGER,
    eval_sql_version  VARCHAR NOT NULL,
    rules             VARCHAR NOT NULL,
    failed_at         TIMESTAMP NOT NULL,
    error             VARCHAR NOT NULL
);

CREATE SEQUENCE service.scoring_pass_id_seq START 1;
CREATE TABLE service.scoring_passes (
    pass_id      INTEGER PRIMARY KEY DEFAULT nextval('service.scoring_pass_id_seq'),
    finished_at  TIMESTAMP NOT NULL,
    ok           BOOLEAN NOT NULL,
    failures     JSON NOT NULL            -- [{"footprint" or "submission_id", "error"}]
);
