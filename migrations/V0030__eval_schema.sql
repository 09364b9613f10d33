-- Scoring schema (docs/scoring.md): submissions and their integer-keyed forecasts, footprints
-- (named, versioned cell sets), score runs with provenance, and every result table
-- (metrics, quarter losses for Diebold-Mariano, DM tests, PIT, coverage, coherence).
CREATE SCHEMA IF NOT EXISTS eval;

CREATE SEQUENCE eval.submission_id_seq START 1;
CREATE TABLE eval.submissions (
    submission_id  INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,           -- upload | model | reference
    family         VARCHAR NOT NULL CHECK (family IN ('gaussian', 'laplace', 'student_t')),
    df             DOUBLE,                     -- Student-t degrees of freedom
    has_sigma      BOOLEAN NOT NULL,
    n_components   INTEGER NOT NULL,           -- 1 = single forecast, K > 1 = equal-weight mixture
    rows           BIGINT NOT NULL,
    cells          BIGINT NOT NULL,
    checksum       VARCHAR NOT NULL,           -- sha256 of the file or of the Arrow batches
    build_id       INTEGER,                    -- meta.builds row current at ingest (NULL if none)
    warnings       JSON,
    metadata       JSON,
    created_at     TIMESTAMP NOT NULL,
    retired_at     TIMESTAMP                   -- set when a newer submission took its name
);

-- One row per (cell, component). Keys are integers (docs/contracts.md, "Keys").
CREATE TABLE eval.forecasts (
    submission_id  INTEGER NOT NULL,
    firm_id        INTEGER,
    origin_q       INTEGER,
    item_id        SMALLINT,
    horizon        TINYINT,
    component      SMALLINT,
    mu             DOUBLE,
    sigma          DOUBLE
);

CREATE SEQUENCE eval.footprint_id_seq START 1;
CREATE TABLE eval.footprints (
    footprint_id   INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    version        INTEGER NOT NULL,
    kind           VARCHAR NOT NULL CHECK (kind IN ('predicate', 'cells', 'origins')),
    predicate      VARCHAR NOT NULL DEFAULT 'TRUE',  -- validated SQL over firm, origin, item, horizon
    split          VARCHAR NOT NULL DEFAULT 'test',
    description    VARCHAR,
    definition     JSON,                             -- how it was made (submissions, seed, ...)
    n_cells        BIGINT,                           -- scoreable truth cells at creation
    build_id       INTEGER,
    created_at     TIMESTAMP NOT NULL,
    UNIQUE (name, version)
);
CREATE TABLE eval.footprint_cells (
    footprint_id   INTEGER NOT NULL,
    firm_id        INTEGER NOT NULL,
    origin_q       INTEGER NOT NULL,
    item_id        SMALLINT NOT NULL,
    horizon        TINYINT NOT NULL
);
CREATE TABLE eval.footprint_origins (
    footprint_id   INTEGER NOT NULL,
    firm_id        INTEGER NOT NULL,
    origin_q       INTEGER NOT NULL
);

CREATE SEQUENCE eval.score_run_id_seq START 1;
CREATE TABLE eval.score_runs (
    score_run_id       INTEGER PRIMARY KEY,
    footprint_id       INTEGER NOT NULL,
    footprint_name     VARCHAR NOT NULL,
    footprint_version  INTEGER NOT NULL,
    submission_ids     INTEGER[] NOT NULL,
    footprint_cells    BIGINT NOT NULL,      -- finite truth cells in the footprint
    n_cells            BIGINT NOT NULL,      -- the common sample every submission is scored on
    build_id           INTEGER,
    build              JSON,                 -- the meta.builds record (version, checksums)
    eval_sql_version   VARCHAR NOT NULL,     -- folder_checksum('eval')
    submission_checksums JSON NOT NULL,
    started_at         TIMESTAMP NOT NULL,
    finished_at        TIMESTAMP NOT NULL,
    elapsed_s          DOUBLE NOT NULL
);

CREATE TABLE eval.coverage (
    score_run_id     INTEGER NOT NULL,
    submission_id    INTEGER NOT NULL,
    footprint_cells  BIGINT NOT NULL,
    predicted_cells  BIGINT NOT NULL,        -- footprint cells the submission predicts finitely
    coverage         DOUBLE                  -- predicted_cells / footprint_cells
);

-- level: global | horizon | item | statement | item_horizon (unused keys are NULL)
CREATE TABLE eval.metrics (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    level          VARCHAR NOT NULL,
    horizon        TINYINT,
    item_id        SMALLINT,
    statement      VARCHAR,
    n              BIGINT NOT NULL,
    r2             DOUBLE,
    mse            DOUBLE,
    mae            DOUBLE,
    nll            DOUBLE,
    crps           DOUBLE,
    z2             DOUBLE,
    cov50          DOUBLE,
    cov80          DOUBLE,
    cov90          DOUBLE,
    cov95          DOUBLE,
    sum_y          DOUBLE,
    sum_y2         DOUBLE,
    sse            DOUBLE,
    sae            DOUBLE
);

-- Per origin calendar quarter and horizon loss sums: the Diebold-Mariano input.
CREATE TABLE eval.quarter_losses (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    horizon        TINYINT NOT NULL,
    origin_q       INTEGER NOT NULL,
    n              BIGINT NOT NULL,
    sum_sq         DOUBLE NOT NULL,
    sum_abs        DOUBLE NOT NULL
);

-- d = loss(a) - loss(b) per quarter; a positive statistic favours b. horizon 0 = pooled.
CREATE TABLE eval.dm_tests (
    score_run_id   INTEGER NOT NULL,
    submission_a   INTEGER NOT NULL,
    submission_b   INTEGER NOT NULL,
    loss           VARCHAR NOT NULL CHECK (loss IN ('squared', 'absolute')),
    horizon        TINYINT NOT NULL,
    n_quarters     INTEGER NOT NULL,
    bandwidth      INTEGER NOT NULL,
    mean_diff      DOUBLE,
    dm_stat        DOUBLE,
    p_value        DOUBLE
);

CREATE TABLE eval.pit (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    bin            TINYINT NOT NULL,         -- 0..19: u in [bin/20, (bin+1)/20)
    n              BIGINT NOT NULL,
    share          DOUBLE NOT NULL
);

-- identity = 'ALL' is the overall median; violation = |sum s_j v_j| / sum |v_j| in dollars.
CREATE TABLE eval.coherence (
    submission_id     INTEGER NOT NULL,
    identity          VARCHAR NOT NULL,
    n_instances       BIGINT NOT NULL,
    median_violation  DOUBLE,
    mean_violation    DOUBLE,
    eval_sql_version  VARCHAR NOT NULL,
    computed_at       TIMESTAMP NOT NULL
);

-- Normal CDF and density for the density metrics. DuckDB has no erf, so the CDF is
-- Hart's double-precision rational approximation (West 2005, "Better approximations
-- to cumulative normal functions"; absolute error below 1e-14).
CREATE MACRO eval.norm_tail(a) AS (
    CASE
        WHEN a > 37 THEN 0.0
        WHEN a < 7.07106781186547 THEN exp(-a * a / 2)
            * ((((((3.52624965998911e-02 * a + 0.700383064443688) * a + 6.37396220353165) * a
                + 33.912866078383) * a + 112.079291497871) * a + 221.213596169931) * a
                + 220.206867912376)
            / (((((((8.83883476483184e-02 * a + 1.75566716318264) * a + 16.064177579207) * a
                + 86.7807322029461) * a + 296.564248779674) * a + 637.333633378831) * a
                + 793.826512519948) * a + 440.413735824752)
        ELSE exp(-a * a / 2) / (a + 1 / (a + 2 / (a + 3 / (a + 4 / (a + 0.65))))) / 2.506628274631
    END
);
CREATE MACRO eval.norm_cdf(x) AS (
    CASE WHEN x > 0 THEN 1 - eval.norm_tail(abs(x)) ELSE eval.norm_tail(abs(x)) END
);
CREATE MACRO eval.norm_pdf(x) AS exp(-x * x / 2) / sqrt(2 * pi());
-- Laplace CDF with location m and scale b.
CREATE MACRO eval.laplace_cdf(y, m, b) AS (
    CASE WHEN y < m THEN 0.5 * exp((y - m) / b) ELSE 1 - 0.5 * exp(-(y - m) / b) END
);
-- E|X - X'| for independent Laplace(m1, b1), Laplace(m2, b2) (closed form; the equal
-- scale limit is used when the scales nearly coincide, avoiding cancellation).
CREATE MACRO eval.laplace_pair(d, b1, b2) AS (
    CASE
        WHEN abs(b1 - b2) <= 1e-5 * (b1 + b2)
            THEN abs(d) + (3 * ((b1 + b2) / 2) + abs(d)) / 2 * exp(-abs(d) / ((b1 + b2) / 2))
        ELSE abs(d) + (b1 * b1 * b1 * exp(-abs(d) / b1) - b2 * b2 * b2 * exp(-abs(d) / b2))
            / (b1 * b1 - b2 * b2)
    END
);
-- Gneiting's A(m, s) = E|m + s Z| for Z standard normal (Gaussian-mixture CRPS).
CREATE MACRO eval.gauss_abs(m, s) AS
    m * (2 * eval.norm_cdf(m / s) - 1) + 2 * s * eval.norm_pdf(m / s);
-- Cell key packing (firm, origin, item, horizon) into one BIGINT for fast joins.
CREATE MACRO eval.cell_key(firm_id, origin_q, item_id, horizon) AS
    ((CAST(firm_id AS BIGINT) * 16384 + origin_q) * 128 + item_id) * 32 + horizon;
-- Quarter ordinal of a submission's origin given as text: '2015Q1', '2015-Q1', '2015 Q1' or
-- any date or timestamp inside the quarter; NULL when it is none of these.
CREATE MACRO eval.origin_from_text(s) AS (
    CASE
        WHEN regexp_full_match(trim(s), '[0-9]{4}[ -]?[Qq][1-4]')
            THEN CAST(left(trim(s), 4) AS INTEGER) * 4 + CAST(right(trim(s), 1) AS INTEGER) - 1
        ELSE qord(CAST(TRY_CAST(trim(s) AS TIMESTAMP) AS DATE))
    END
);
-- Log density of the standard Student-t with nu degrees of freedom.
CREATE MACRO eval.t_logpdf(w, nu) AS
    lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * ln(nu * pi()) - (nu + 1) / 2 * ln(1 + w * w / nu);
-- Beta function via log-gamma.
CREATE MACRO eval.beta_fn(a, b) AS exp(lgamma(a) + lgamma(b) - lgamma(a + b));
