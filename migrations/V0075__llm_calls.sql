-- The LLM panel's records (docs/llm.md): llm.calls, one row per provider call (or
-- cached answer) of `proforma run llm`, with the request settings, token counts, cost
-- and parse outcome, tied to the submission the answer went into; llm.noise, the
-- decoding-noise summary of K repeated draws (cross-call sd by horizon, standardized).
CREATE SCHEMA IF NOT EXISTS llm;

CREATE TABLE llm.calls (
    submission_id     INTEGER,            -- eval.submissions row the answer fed (NULL: none written)
    provider          VARCHAR NOT NULL,   -- anthropic | openai | fake
    model             VARCHAR NOT NULL,   -- the requested model id
    arm               VARCHAR NOT NULL,   -- unstructured | structured
    draw              INTEGER NOT NULL,   -- 1 = the main run; 2..K decoding-noise replicates
    attempt           INTEGER NOT NULL,   -- 1, or 2 for the one retry after an unusable answer
    gvkey             VARCHAR NOT NULL,
    firm_id           INTEGER NOT NULL,
    origin_q          INTEGER NOT NULL,
    prompt_key        VARCHAR NOT NULL,   -- sha256 of provider, model, settings, prompts, draw, attempt
    settings          JSON,               -- reasoning settings, temperature, max tokens
    response_model    VARCHAR,            -- the model id the provider reports
    response_id       VARCHAR,
    stop_reason       VARCHAR,
    cached            BOOLEAN NOT NULL,   -- answered from the response cache (paid earlier)
    status            VARCHAR NOT NULL,   -- ok | incomplete | error
    reason            VARCHAR,            -- why an answer was incomplete or the call failed
    used              BOOLEAN NOT NULL,   -- this attempt's answer went into the forecasts
    cells_expected    INTEGER,            -- reported primitives x horizons asked for
    cells_parsed      INTEGER,
    input_tokens      BIGINT,
    cached_input_tokens BIGINT,
    output_tokens     BIGINT,             -- includes reasoning tokens (both vendors bill them as output)
    reasoning_tokens  BIGINT,
    cost_usd          DOUBLE,             -- from the prices table; NULL for a model it lacks
    prices_as_of      VARCHAR,
    elapsed_s         DOUBLE,
    called_at         TIMESTAMP NOT NULL
);

CREATE TABLE llm.noise (
    provider          VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    arm               VARCHAR NOT NULL,
    draws             INTEGER NOT NULL,
    submission_ids    INTEGER[] NOT NULL, -- draw 1 (the main run) first
    horizon           TINYINT NOT NULL,
    n_origins         BIGINT NOT NULL,
    n_cells           BIGINT NOT NULL,    -- cells every draw forecast finitely
    mean_sd           DOUBLE,             -- mean over cells of the cross-draw sd of mu
    created_at        TIMESTAMP NOT NULL
);
