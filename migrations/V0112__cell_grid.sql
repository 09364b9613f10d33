-- The cell grid (issue 31): each scored split's truth laid out by position, so that a
-- forecast meets its truth, its footprint and the common sample by index instead of by
-- hash joins on the packed cell key. Rows are the split's eligible origins (panel.origins)
-- in (firm, origin) order, numbered from 0; each row has one slot per target item (in
-- item_id order) and horizon: position = row * 20 * items + item slot * 20 + horizon - 1.
-- eval.grid_cells holds the truth of the scoreable cells (finite actual and baseline) at
-- their position; every other position has none. Derived from panel.truth for one
-- build (sql/eval/042_cell_grid.sql, proforma.app.scoring.grid), remade when the build or
-- the truth's fingerprint changes.
CREATE TABLE eval.grids (
    build_id     INTEGER NOT NULL,             -- -1 when the warehouse has no build record
    split        VARCHAR NOT NULL,
    fingerprint  VARCHAR NOT NULL,             -- count and hash of the split's scoreable truth
    truth_rows   BIGINT NOT NULL,              -- panel.truth's rows when it was made
    n_rows       INTEGER NOT NULL,
    n_slots      INTEGER NOT NULL,
    n_cells      BIGINT NOT NULL,
    made_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (build_id, split)
);

CREATE TABLE eval.grid_rows (
    build_id  INTEGER NOT NULL,
    split     VARCHAR NOT NULL,
    row       INTEGER NOT NULL,
    firm_id   INTEGER NOT NULL,
    origin_q  INTEGER NOT NULL
);

CREATE TABLE eval.grid_cells (
    build_id  INTEGER NOT NULL,
    split     VARCHAR NOT NULL,
    pos       BIGINT NOT NULL,
    actual    DOUBLE NOT NULL,            -- as panel.truth holds it (FLOAT in a build)
    change    DOUBLE
);
