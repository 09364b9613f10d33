-- Leaderboards a referee would accept (issue 49).
--
-- 1. The board is the footprint's current state. A score run records whether its members
--    are the footprint's whole current membership (`board`: every active submission
--    that covers the footprint, chosen by the scorer, as `proforma score` without -s and
--    every service pass do) or a list someone named (`proforma score -s`, `submit
--    --score`, a flow's own subset). The view eval.board_runs gives each footprint's
--    board: its newest board run, or its newest run when it has no board run yet. Runs
--    recorded before this migration are counted as boards (NULL), as they were shown.
ALTER TABLE eval.score_runs ADD COLUMN board BOOLEAN;

CREATE VIEW eval.board_runs AS
SELECT footprint_name,
       coalesce(max(score_run_id) FILTER (WHERE board IS NOT false), max(score_run_id))
           AS score_run_id
FROM eval.score_runs
GROUP BY footprint_name;

-- 2. Rank uncertainty. Per (submission, firm, origin quarter) of a run's common sample,
--    the additive sums the headline metrics finish from (contracts/metrics.py
--    UNCERTAINTY_METRICS: R2, MSE, MAE, CRPS), written once per (from_run, submission)
--    like eval.quarter_loss_rows and shown for every run that references them through
--    eval.run_results (the view eval.cluster_losses). A bootstrap that resamples firms
--    and origin quarters reweights these rows (proforma.app.scoring.uncertainty).
CREATE TABLE eval.cluster_loss_rows (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    firm_id        INTEGER NOT NULL,
    origin_q       INTEGER NOT NULL,
    n              BIGINT NOT NULL,
    sum_y          DOUBLE,
    sum_y2         DOUBLE,
    sse            DOUBLE,
    n_abs          BIGINT,
    sae            DOUBLE,
    n_crps         BIGINT,
    sum_crps       DOUBLE
);

CREATE VIEW eval.cluster_losses AS
SELECT r.score_run_id, c.* EXCLUDE (score_run_id)
FROM eval.run_results r
JOIN eval.cluster_loss_rows c ON c.score_run_id = r.from_run AND c.submission_id = r.submission_id;

-- One row per board run whose uncertainty was computed: how (the seed, the replications,
-- the block of origin quarters, the levels), on what (firms, quarters) and how long.
CREATE TABLE eval.uncertainty_runs (
    score_run_id   INTEGER PRIMARY KEY,
    method         VARCHAR NOT NULL,
    seed           BIGINT NOT NULL,
    replications   INTEGER NOT NULL,
    block_size     INTEGER NOT NULL,
    ci_level       DOUBLE NOT NULL,
    mcs_alpha      DOUBLE NOT NULL,
    mcs_statistic  VARCHAR NOT NULL,
    n_firms        INTEGER NOT NULL,
    n_quarters     INTEGER NOT NULL,
    elapsed_s      DOUBLE NOT NULL,
    computed_at    TIMESTAMP NOT NULL
);

-- Each member's headline metrics with their bootstrap percentile interval.
CREATE TABLE eval.metric_intervals (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    metric         VARCHAR NOT NULL,
    estimate       DOUBLE,
    lo             DOUBLE,
    hi             DOUBLE
);

-- Per track: each member's probability of ranking first across the replications, its
-- model-confidence-set p-value (Hansen, Lunde and Nason 2011) and whether it is in the
-- set at the run's mcs_alpha.
-- `scope`: 'all' among every member (the warehouse's board), 'public' among the members
-- that are not uploads (what the public boards show: a probability or a set taken with an
-- upload's exact losses in it would be one more channel to its cells' truth;
-- docs/service.md, "The truth: threat model").
CREATE TABLE eval.rank_sets (
    score_run_id   INTEGER NOT NULL,
    track          VARCHAR NOT NULL,
    submission_id  INTEGER NOT NULL,
    p_best         DOUBLE NOT NULL,
    mcs_p          DOUBLE NOT NULL,
    in_mcs         BOOLEAN NOT NULL,
    scope          VARCHAR NOT NULL DEFAULT 'all' CHECK (scope IN ('all', 'public'))
);
