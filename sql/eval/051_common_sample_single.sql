-- The common sample of a score run with ONE submission: the footprint's cells
-- (fp_truth) that the submission predicts finitely. 060 applies the "predicts finitely"
-- condition itself while it joins the forecasts (finite mu, sigma finite and > 0, all
-- mixture components), so here common_cells is simply a view over fp_truth: no extra
-- pass over the forecasts. The sample's size is then the global n of 070.
CREATE OR REPLACE TEMP VIEW common_cells AS
SELECT * FROM fp_truth;
