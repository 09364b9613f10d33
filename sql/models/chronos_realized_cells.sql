-- Chronos-2 quantile cells worth writing: the rows of the registered Arrow table
-- {{ forecasts }} (firm_id, origin_q, item_id, horizon, quantiles: the cell's 21 quantiles)
-- whose cell is a truth cell (panel.truth_cells: item present at the origin, reported at
-- t+h, not purged), for origins getvariable('lo_q')..getvariable('hi_q'). A forecast of
-- any other cell could never be scored (like `run baselines`, only realized cells are
-- written).
SELECT f.firm_id, f.origin_q, f.item_id, f.horizon, f.quantiles
FROM {{ forecasts }} AS f
SEMI JOIN (
    SELECT firm_id, origin_q, item_id, horizon
    FROM panel.truth_cells
    WHERE origin_q BETWEEN getvariable('lo_q') AND getvariable('hi_q')
) AS t
  ON t.firm_id = f.firm_id AND t.origin_q = f.origin_q
 AND t.item_id = f.item_id AND t.horizon = f.horizon
ORDER BY f.origin_q, f.firm_id, f.item_id, f.horizon
