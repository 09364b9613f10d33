-- The vintage of ingest getvariable('ingest_id'), from raw.fundq (just written) and the
-- earlier vintages in raw.fundq_vintages: one raw.vintages row (the calendar quarters of
-- its datadates; rows_new: rows of a key (gvkey, datadate, fyearq, fqtr) never reported
-- before; rows_restated: rows of a known key with other values; rows_dropped: known keys
-- it no longer holds), and its rows not reported before (by a hash of the whole row)
-- into raw.fundq_vintages. A row reported again unchanged keeps its first vintage.
CREATE OR REPLACE TEMP TABLE vintage_now AS
SELECT hash(f) AS row_hash, f.* FROM raw.fundq AS f;

CREATE OR REPLACE TEMP TABLE vintage_fresh AS
SELECT n.*,
       EXISTS (SELECT 1 FROM raw.fundq_vintages AS v
               WHERE v.gvkey = n.gvkey AND v.datadate = n.datadate
                 AND v.fyearq IS NOT DISTINCT FROM n.fyearq
                 AND v.fqtr IS NOT DISTINCT FROM n.fqtr) AS restated
FROM vintage_now AS n
WHERE n.row_hash NOT IN (SELECT row_hash FROM raw.fundq_vintages);

INSERT INTO raw.vintages
SELECT getvariable('ingest_id'),
       (SELECT min(qord(datadate)) FROM raw.fundq),
       (SELECT max(qord(datadate)) FROM raw.fundq),
       (SELECT count(*) FROM vintage_fresh WHERE NOT restated),
       (SELECT count(*) FROM vintage_fresh WHERE restated),
       (SELECT count(*) FROM (
            SELECT DISTINCT gvkey, datadate, fyearq, fqtr FROM raw.fundq_vintages
            EXCEPT
            SELECT gvkey, datadate, fyearq, fqtr FROM raw.fundq));

INSERT INTO raw.fundq_vintages BY NAME
SELECT getvariable('ingest_id') AS ingest_id, * EXCLUDE (restated) FROM vintage_fresh;

DROP TABLE vintage_now;
DROP TABLE vintage_fresh;
