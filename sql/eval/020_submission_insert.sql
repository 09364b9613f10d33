-- eval.forecasts rows of submission getvariable('submission_id') from the checked temp
-- view `submission_in`: gvkey -> panel.firms.firm_id, item name -> ref.items.item_id,
-- origin already a quarter ordinal. Runs only after 010 found no blocking problem.
INSERT INTO eval.forecasts
SELECT
    getvariable('submission_id') AS submission_id,
    f.firm_id,
    s.origin_q,
    i.item_id,
    CAST(s.horizon_num AS TINYINT) AS horizon,
    CAST(s.component AS SMALLINT) AS component,
    s.prediction AS mu,
    s.sigma
FROM submission_in s
JOIN panel.firms f ON f.gvkey = s.firm
JOIN ref.items i ON i.item = s.target AND i.is_target;
