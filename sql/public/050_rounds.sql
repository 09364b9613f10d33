-- Public rounds (docs/rounds.md): every round's frozen description (origin quarter,
-- deadline, sizes, rule set), its resolution per horizon (cell counts), its entries
-- (names, kinds, checksums, receipt times) and its metrics (rounds.metrics, written by
-- each resolution: the covering entries' common sample, each other entry's own cells,
-- as `sample` says). Aggregates over fewer than
-- getvariable('public_min_cells') cells are withheld, and an upload's numbers carry the
-- keyed noise of its grant as in sql/public/005 (each metric as its definition says:
-- contracts/metrics.py, the slot metric_public; the publisher's pf_coarsen), so that no
-- combination of public numbers reads a truth value back. No firm appears.
CREATE TABLE pub.rounds AS
SELECT r.round_id, r.name, qlabel(r.origin_q) AS origin, r.deadline, r.opened_at, r.rules,
       r.n_origins, r.n_cells,
       (SELECT count(*) FROM rounds.truth t WHERE t.round_id = r.round_id) AS cells_resolved,
       (SELECT qlabel(r.origin_q + max(t.horizon)) FROM rounds.truth t
        WHERE t.round_id = r.round_id) AS resolved_through
FROM rounds.rounds AS r
ORDER BY r.round_id;

CREATE TABLE pub.round_resolution AS
SELECT round_id, horizon, count(*) AS cells_resolved
FROM rounds.truth
GROUP BY round_id, horizon
ORDER BY round_id, horizon;

CREATE TABLE pub.round_entries AS
SELECT submission_id, round_id, name AS model, kind, family, sha256 AS checksum, received_at
FROM rounds.submissions
ORDER BY round_id, submission_id;

CREATE TABLE pub.round_metrics AS
WITH m AS (
    SELECT m.*, s.name AS model, s.kind = 'upload' AS is_upload,
           TRUE AS is_headline, FALSE AS upload_hidden,
           coalesce(g.sigma, getvariable('disclosure_fallback_sigma')) AS noise_sigma,
           'round/' || m.round_id || '/' || m.submission_id || '/'
           || coalesce(CAST(m.horizon AS VARCHAR), 'global') || '/' AS label
    FROM rounds.metrics AS m
    JOIN rounds.submissions AS s USING (submission_id)
    LEFT JOIN service.upload_noise AS g ON g.door = 'round' AND g.submission_id = m.submission_id
    WHERE m.n >= getvariable('public_min_cells')
)
SELECT round_id, submission_id, model, horizon, sample, n,
       {{ metric_public }}
FROM m
ORDER BY round_id, submission_id, horizon NULLS FIRST;
