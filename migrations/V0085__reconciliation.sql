-- Ex-post reconciliation (app/reconcile.py, docs/report.md): one eval.reconciliations
-- row per `proforma reconcile` job (parent submission, weights, the derived submission
-- once written), eval.reconcile_quarters the origin quarters a job has finished (what
-- makes it resumable: a rerun skips them) with their statement counts and largest
-- residual, and eval.reconcile_cells the reconciled dollars of the cells a finished
-- quarter changed (staging: emptied once the derived submission is stored).
CREATE SEQUENCE eval.reconcile_id_seq START 1;
CREATE TABLE eval.reconciliations (
    reconcile_id     INTEGER PRIMARY KEY,
    parent_id        INTEGER NOT NULL,       -- eval.submissions row reconciled
    weights          VARCHAR NOT NULL CHECK (weights IN ('variance', 'equal')),
    name             VARCHAR NOT NULL,       -- the derived submission's name
    status           VARCHAR NOT NULL CHECK (status IN ('running', 'done')),
    submission_id    INTEGER,                -- the derived submission, once stored
    statements       BIGINT,                 -- statements with an enforceable identity
    cells_changed    BIGINT,
    max_residual     DOUBLE,                 -- largest |sum s_j v_j| / sum |s_j v_j| after
    started_at       TIMESTAMP NOT NULL,
    finished_at      TIMESTAMP
);
CREATE TABLE eval.reconcile_quarters (
    reconcile_id     INTEGER NOT NULL,
    origin_q         INTEGER NOT NULL,
    statements       BIGINT NOT NULL,
    cells_changed    BIGINT NOT NULL,
    max_residual     DOUBLE,
    elapsed_s        DOUBLE NOT NULL,
    PRIMARY KEY (reconcile_id, origin_q)
);
CREATE TABLE eval.reconcile_cells (
    reconcile_id     INTEGER NOT NULL,
    firm_id          INTEGER NOT NULL,
    origin_q         INTEGER NOT NULL,
    item_id          SMALLINT NOT NULL,
    horizon          TINYINT NOT NULL,
    v                DOUBLE NOT NULL         -- reconciled value in reported units
);
