-- Quarter ordinals used everywhere inside the warehouse: q = year * 4 + quarter - 1
-- (2001Q4 = 8007). Dates and labels appear only at the edges.
CREATE MACRO qord(d) AS year(d) * 4 + quarter(d) - 1;
CREATE MACRO qend(q) AS last_day(make_date(CAST(q // 4 AS BIGINT), CAST((q % 4) * 3 + 3 AS BIGINT), 1));
CREATE MACRO qlabel(q) AS CAST(q // 4 AS VARCHAR) || 'Q' || CAST(q % 4 + 1 AS VARCHAR);
