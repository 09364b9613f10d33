-- The decoding-noise summary of K draws of one LLM run (docs/llm.md "Decoding noise"),
-- from eval.forecasts of the submissions getvariable('submission_ids') (draw 1, the main
-- run, first): the cells that every draw forecast finitely; per cell the sample standard
-- deviation of the standardized forecast across draws; per horizon the origins and
-- cells behind it and the mean of those deviations.
WITH cells AS (
    SELECT firm_id, origin_q, item_id, horizon, count(*) AS draws, stddev_samp(mu) AS sd
    FROM eval.forecasts
    WHERE list_contains(getvariable('submission_ids'), submission_id) AND isfinite(mu)
    GROUP BY firm_id, origin_q, item_id, horizon
)
SELECT horizon::TINYINT AS horizon,
       count(DISTINCT (firm_id, origin_q)) AS n_origins,
       count(*) AS n_cells,
       avg(sd) AS mean_sd
FROM cells
WHERE draws = len(getvariable('submission_ids'))
GROUP BY horizon
ORDER BY horizon;
