-- An entry whose cells fail to score at a resolution (issue 47) is isolated: its
-- failure is recorded here, the other entries resolve, and the next resolution tries
-- its unscored cells again. /health reports the failures of the latest resolution.
CREATE TABLE rounds.entry_failures (
    resolution_id INTEGER NOT NULL,
    submission_id INTEGER NOT NULL,
    error         VARCHAR NOT NULL,
    failed_at     TIMESTAMP NOT NULL
);

-- Which sample a round's metric row is over (issue 47): 'common' for the entries that
-- cover enough of the round's resolved cells (scored on their common sample), 'own' for
-- each other entry (scored on its own cells, off the common board). Rows written before
-- were all on the common sample of every entry.
ALTER TABLE rounds.metrics ADD COLUMN sample VARCHAR DEFAULT 'common';
