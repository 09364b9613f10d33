-- Reference data as tables: the 78 benchmark items (+ the `scale` pseudo-item, id 0),
-- the 26 accounting identities as signed terms, and the Fama-French 48 SIC ranges.
-- Rows are (re)loaded from reference/*.csv by `proforma migrate` (app/reference.py).
CREATE SCHEMA IF NOT EXISTS ref;

CREATE TABLE ref.items (
    item_id      SMALLINT PRIMARY KEY,
    item         VARCHAR NOT NULL UNIQUE,
    description  VARCHAR,
    statement    VARCHAR NOT NULL,  -- BS, IS, CF, Der, or Scale for the pseudo-item
    ytd_source   VARCHAR,           -- raw YTD column for cash-flow items
    is_target    BOOLEAN NOT NULL,
    pct_raw      DOUBLE,
    pct_train    DOUBLE,
    pct_val      DOUBLE,
    pct_test     DOUBLE
);

CREATE TABLE ref.identities (
    identity   VARCHAR NOT NULL,
    statement  VARCHAR NOT NULL,
    item       VARCHAR NOT NULL,
    item_id    SMALLINT NOT NULL,
    sign       TINYINT NOT NULL CHECK (sign IN (-1, 1)),
    PRIMARY KEY (identity, item)
);

CREATE TABLE ref.ff48 (
    ff48        SMALLINT NOT NULL,
    short_name  VARCHAR NOT NULL,
    label       VARCHAR NOT NULL,
    sic_lo      INTEGER NOT NULL,
    sic_hi      INTEGER NOT NULL
);

CREATE TABLE ref.loaded (
    name      VARCHAR PRIMARY KEY,
    checksum  VARCHAR NOT NULL,
    rows      INTEGER NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);
