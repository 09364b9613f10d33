-- The live leaderboard's metrics (app/rounds/resolve.live_leaderboard): per model name,
-- the sums of every resolved cell of every round it entered, pooled across those rounds
-- and finished into the metrics as contracts/metrics.py defines them (slots
-- metric_cell_sums and metric_finish, as sql/rounds/050 does for one round), with the
-- rounds it entered. Each model's own cells: models that entered different rounds are
-- pooled over different cells (the Diebold-Mariano test against the leader compares them
-- on the cells both scored). Cell inputs as sql/rounds/040-042 stored them.
WITH cells AS (
    SELECT s.name, s.round_id, t.actual::DOUBLE - t.baseline::DOUBLE AS y,
           c.r, c.r_abs, c.nll, c.crps, c.z, c.u,
           {{ metric_coverage_columns }}
    FROM rounds.cell_scores AS c
    JOIN rounds.submissions AS s USING (submission_id)
    JOIN rounds.truth AS t
      ON t.round_id = s.round_id AND t.gvkey = c.gvkey
     AND t.item_id = c.item_id AND t.horizon = c.horizon
),
rolled AS (
    SELECT name, count(DISTINCT round_id) AS rounds,
           {{ metric_cell_sums }}
    FROM cells
    GROUP BY name
)
SELECT name, rounds, n,
       {{ metric_finish }}
FROM rolled
ORDER BY name;
