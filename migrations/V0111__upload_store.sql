-- The upload store (issue 31): a validated point upload is kept as one immutable,
-- content-addressed parquet file (app/scoring/submissions/store.py) and scanned in place
-- for scoring, instead of being inserted into eval.forecast_points. This table says which
-- file holds a submission's rows: its name in the store (`{sha256}.b{build_id}.parquet`,
-- shared by uploads of the same bytes against the same build), the rows and bytes it
-- must have (a file that lost either is refused as damaged), and the origin range of its
-- finite predictions (the truth scan of scoring reads only those quarters).
CREATE TABLE eval.submission_files (
    submission_id  INTEGER PRIMARY KEY,
    file           VARCHAR NOT NULL,
    rows           BIGINT NOT NULL,
    bytes          BIGINT NOT NULL,
    first_q        INTEGER NOT NULL,
    last_q         INTEGER NOT NULL,
    stored_at      TIMESTAMP NOT NULL
);
