-- raw.oracle_paths in wide form: one row per (origin, horizon, path) with the 78 items as
-- REAL columns named as in ref.items (dollar values in millions, quarterly flows, not
-- YTD; single precision is ample for a Monte Carlo forecast and halves the file). Far
-- fewer cells to write than the long form of V0010, which it replaces.
-- horizon 0 holds the origin's true values (path 0 only); horizons 1..H paths 0..M-1.
DROP TABLE raw.oracle_paths;
CREATE TABLE raw.oracle_paths (
    origin_id INTEGER NOT NULL, horizon TINYINT NOT NULL, path SMALLINT NOT NULL,
    acomincq REAL, acoq REAL, actq REAL, ancq REAL, aoq REAL, aoq_ex_intanq REAL,
    apq REAL, aqcq REAL, atq REAL, capsq REAL, capxq REAL, ceqq REAL, cheq REAL,
    cogsq REAL, cstkq REAL, dlcchq REAL, dlcq REAL, dltisq REAL, dltrq REAL,
    dlttq REAL, dpactq REAL, dpq REAL, drcq REAL, drltq REAL, dvq REAL, exreq REAL,
    fcfq REAL, fiaoq REAL, fincfq REAL, fopoq REAL, gdwlq REAL, gpq REAL, ibq REAL,
    intanoq REAL, intanq REAL, invtq REAL, ivacoq REAL, ivchq REAL, ivncfq REAL,
    ivstchq REAL, lcoq REAL, lctq REAL, loq REAL, loq_ex_dr REAL, ltq REAL,
    mibtq REAL, miiq REAL, niq REAL, nopiq REAL, oancfq REAL, oiadpq REAL,
    oibdpq REAL, piq REAL, ppegtq REAL, ppentq REAL, prstkcq REAL, pstkq REAL,
    rectq REAL, req REAL, revtq REAL, seqq REAL, sivq REAL, spiq REAL, sppeq REAL,
    sstkq REAL, stkcoq REAL, tstkq REAL, txbcofq REAL, txditcq REAL, txpq REAL,
    txtq REAL, wcapq REAL, xidoq REAL, xintq REAL, xoprq REAL, xrdq REAL,
    xsgaq REAL, xsgaq_ex_rd REAL
);
