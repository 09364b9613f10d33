-- The key of the dither with which an upload's public scores are coarsened
-- (app/api/disclosure.py; docs/service.md, "The truth: threat model"): made on first
-- use from the operating system's random source, never published.
CREATE TABLE service.disclosure_key (
    secret  VARCHAR NOT NULL
);
