-- Raw inputs in Compustat shape, written only by sources (app/sources/*).
-- raw.fundq: comp.fundq rows (INDL/STD/C/D); the 52 balance-sheet and income-statement
-- items as reported and the 20 cash-flow items year-to-date (*y), as WRDS serves them.
CREATE SCHEMA IF NOT EXISTS raw;

CREATE TABLE raw.fundq (
    gvkey      VARCHAR NOT NULL CHECK (length(gvkey) = 6),
    datadate   DATE NOT NULL,
    fyearq     INTEGER,
    fqtr       TINYINT CHECK (fqtr BETWEEN 1 AND 4),
    fyr        TINYINT CHECK (fyr BETWEEN 1 AND 12),
    acomincq   DOUBLE,
    acoq       DOUBLE,
    actq       DOUBLE,
    ancq       DOUBLE,
    aoq        DOUBLE,
    apq        DOUBLE,
    atq        DOUBLE,
    capsq      DOUBLE,
    ceqq       DOUBLE,
    cheq       DOUBLE,
    cogsq      DOUBLE,
    cstkq      DOUBLE,
    dlcq       DOUBLE,
    dlttq      DOUBLE,
    dpactq     DOUBLE,
    dpq        DOUBLE,
    drcq       DOUBLE,
    drltq      DOUBLE,
    gdwlq      DOUBLE,
    ibq        DOUBLE,
    intanoq    DOUBLE,
    intanq     DOUBLE,
    invtq      DOUBLE,
    lcoq       DOUBLE,
    lctq       DOUBLE,
    loq        DOUBLE,
    ltq        DOUBLE,
    mibtq      DOUBLE,
    miiq       DOUBLE,
    niq        DOUBLE,
    nopiq      DOUBLE,
    oiadpq     DOUBLE,
    oibdpq     DOUBLE,
    piq        DOUBLE,
    ppegtq     DOUBLE,
    ppentq     DOUBLE,
    pstkq      DOUBLE,
    rectq      DOUBLE,
    req        DOUBLE,
    revtq      DOUBLE,
    seqq       DOUBLE,
    spiq       DOUBLE,
    stkcoq     DOUBLE,
    tstkq      DOUBLE,
    txditcq    DOUBLE,
    txpq       DOUBLE,
    txtq       DOUBLE,
    xidoq      DOUBLE,
    xintq      DOUBLE,
    xoprq      DOUBLE,
    xrdq       DOUBLE,
    xsgaq      DOUBLE,
    aqcy       DOUBLE,
    capxy      DOUBLE,
    dlcchy     DOUBLE,
    dltisy     DOUBLE,
    dltry      DOUBLE,
    dvy        DOUBLE,
    exrey      DOUBLE,
    fiaoy      DOUBLE,
    fincfy     DOUBLE,
    fopoy      DOUBLE,
    ivacoy     DOUBLE,
    ivchy      DOUBLE,
    ivncfy     DOUBLE,
    ivstchy    DOUBLE,
    oancfy     DOUBLE,
    prstkcy    DOUBLE,
    sivy       DOUBLE,
    sppey      DOUBLE,
    sstky      DOUBLE,
    txbcofy    DOUBLE
);

-- comp.co_industry: historical SIC / NAICS; a firm-quarter takes the latest record at
-- or before its datadate.
CREATE TABLE raw.company_industry (
    gvkey     VARCHAR NOT NULL CHECK (length(gvkey) = 6),
    datadate  DATE NOT NULL,
    sich      INTEGER,
    naicsh    INTEGER
);

-- crsp.ccmxpf_lnkhist, already restricted to link types LU/LC and primary flags P/C.
-- A missing linkenddt means the link is still active.
CREATE TABLE raw.ccm_link (
    gvkey      VARCHAR NOT NULL CHECK (length(gvkey) = 6),
    lpermno    INTEGER,
    linktype   VARCHAR,
    linkprim   VARCHAR,
    linkdt     DATE,
    linkenddt  DATE
);

-- One row per ingest: where the raw tables came from.
CREATE SEQUENCE raw.ingest_id_seq START 1;
CREATE TABLE raw.ingests (
    ingest_id    INTEGER PRIMARY KEY DEFAULT nextval('raw.ingest_id_seq'),
    source       VARCHAR NOT NULL,
    parameters   JSON,
    vintage      VARCHAR,
    rows_fundq   BIGINT,
    rows_company_industry BIGINT,
    rows_ccm_link BIGINT,
    checksum     VARCHAR,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP NOT NULL
);
