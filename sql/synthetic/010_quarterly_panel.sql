-- Quarterly values from raw.* derived the way the build derives them (docs/build.md,
-- steps 010-050, and the deflator validity of step 070), for the synthetic validation report.
-- Makes temp tables: syn_rows (the kept filing per firm and calendar quarter after the
-- link-window trim and the financial filter, with the firm's previous kept row),
-- syn_values (gvkey, q, item_id, v: as-reported items, YTD-converted quarterly flows,
-- computed items) and syn_panel (syn_values of scale-valid firm-quarters 1971 on, with
-- their split) and syn_fq (the scale-valid firm-quarters).
CREATE OR REPLACE TEMP TABLE syn_rows AS
WITH trimmed AS (
    SELECT f.*
    FROM raw.fundq AS f
    WHERE NOT EXISTS (SELECT 1 FROM raw.ccm_link AS l WHERE l.gvkey = f.gvkey)
       OR EXISTS (
            SELECT 1 FROM raw.ccm_link AS l
            WHERE l.gvkey = f.gvkey
              AND f.datadate >= l.linkdt
              AND f.datadate <= coalesce(l.linkenddt, DATE '9999-12-31')
       )
),
with_sic AS (
    SELECT t.*, c.sich
    FROM trimmed AS t
    ASOF LEFT JOIN raw.company_industry AS c
        ON t.gvkey = c.gvkey AND t.datadate >= c.datadate
),
kept AS (
    SELECT *, qord(datadate) AS q
    FROM with_sic
    WHERE sich IS NULL OR sich NOT BETWEEN 6000 AND 6999
    QUALIFY row_number() OVER (PARTITION BY gvkey, qord(datadate) ORDER BY fyearq DESC, fqtr DESC) = 1
)
SELECT
    *,
    lag(fyearq) OVER w AS prev_fyearq,
    lag(fqtr) OVER w AS prev_fqtr,
    lag(q) OVER w AS prev_q
FROM kept
WINDOW w AS (PARTITION BY gvkey ORDER BY q);

CREATE OR REPLACE TEMP TABLE syn_long AS
SELECT gvkey, q, fyearq, fqtr, prev_fyearq, prev_fqtr, prev_q, col, v
FROM (
    UNPIVOT syn_rows
    ON COLUMNS(* EXCLUDE (gvkey, datadate, fyearq, fqtr, fyr, sich, q, prev_fyearq, prev_fqtr, prev_q))
    INTO NAME col VALUE v
);

-- YTD -> quarterly within (firm, fyearq): fqtr 1 passes, fqtr k > 1 needs the firm's
-- previous row to be fqtr k-1 of the same fiscal year, else the flow is missing.
CREATE OR REPLACE TEMP TABLE syn_values AS
WITH cols AS (
    SELECT item_id, item, coalesce(ytd_source, item) AS col, ytd_source IS NOT NULL AS is_ytd
    FROM ref.items
    WHERE item_id > 0 AND statement <> 'Der'
)
SELECT l.gvkey, l.q, c.item_id, c.item,
    CASE
        WHEN NOT c.is_ytd OR l.fqtr = 1 THEN l.v
        WHEN l.prev_fyearq = l.fyearq AND l.prev_fqtr = l.fqtr - 1 THEN l.v - p.v
    END AS v
FROM syn_long AS l
JOIN cols AS c ON c.col = l.col
LEFT JOIN syn_long AS p ON c.is_ytd AND p.gvkey = l.gvkey AND p.q = l.prev_q AND p.col = l.col;

DELETE FROM syn_values WHERE v IS NULL;

-- Computed items; carve-outs treat a missing subtracted term as 0.
INSERT INTO syn_values
WITH w AS (
    SELECT gvkey, q,
        max(v) FILTER (WHERE item = 'revtq') AS revtq,
        max(v) FILTER (WHERE item = 'cogsq') AS cogsq,
        max(v) FILTER (WHERE item = 'oancfq') AS oancfq,
        max(v) FILTER (WHERE item = 'capxq') AS capxq,
        max(v) FILTER (WHERE item = 'actq') AS actq,
        max(v) FILTER (WHERE item = 'lctq') AS lctq,
        max(v) FILTER (WHERE item = 'aoq') AS aoq,
        max(v) FILTER (WHERE item = 'intanq') AS intanq,
        max(v) FILTER (WHERE item = 'loq') AS loq,
        max(v) FILTER (WHERE item = 'drltq') AS drltq,
        max(v) FILTER (WHERE item = 'xsgaq') AS xsgaq,
        max(v) FILTER (WHERE item = 'xrdq') AS xrdq
    FROM syn_values
    GROUP BY gvkey, q
),
d AS (
    SELECT gvkey, q, 'gpq' AS item, revtq - cogsq AS v FROM w
    UNION ALL SELECT gvkey, q, 'fcfq', oancfq - capxq FROM w
    UNION ALL SELECT gvkey, q, 'wcapq', actq - lctq FROM w
    UNION ALL SELECT gvkey, q, 'aoq_ex_intanq', aoq - coalesce(intanq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'loq_ex_dr', loq - coalesce(drltq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'xsgaq_ex_rd', xsgaq - coalesce(xrdq, 0) FROM w
)
SELECT d.gvkey, d.q, i.item_id, d.item, d.v
FROM d JOIN ref.items AS i USING (item)
WHERE d.v IS NOT NULL;

-- Scale-valid: |ltq| + |seqq| + 1e-3 when both are reported, else |atq| + 1e-3.
CREATE OR REPLACE TEMP TABLE syn_fq AS
SELECT gvkey, q,
    CASE WHEN q < 2002 * 4 THEN 'train' WHEN q < 2010 * 4 THEN 'val' ELSE 'test' END AS split
FROM syn_values
WHERE q >= 1971 * 4
GROUP BY gvkey, q
HAVING (count(*) FILTER (WHERE item = 'ltq') > 0 AND count(*) FILTER (WHERE item = 'seqq') > 0)
    OR count(*) FILTER (WHERE item = 'atq') > 0;

CREATE OR REPLACE TEMP TABLE syn_panel AS
SELECT v.gvkey, v.q, f.split, v.item_id, v.item, v.v
FROM syn_values AS v
JOIN syn_fq AS f USING (gvkey, q);
