# ProForma-20Q: the benchmark service and its demo in one image.
# The project installs exactly as on a developer machine (`make setup`), into /app/.venv.
FROM python:3.11-slim-bookworm

# PyTorch's CPU-only wheel index: the default PyPI wheel bundles CUDA (several GB) that
# the service never uses. Build with TORCH_INDEX_URL="" to take torch from PyPI instead.
ARG TORCH_INDEX_URL="https://download.pytorch.org/whl/cpu"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PATH="/app/.venv/bin:${PATH}" \
    PROFORMA_WAREHOUSE=/data/warehouse.duckdb \
    PROFORMA_PUBLIC_SNAPSHOT=/data/public.duckdb \
    PROFORMA_UPLOAD_DIR=/data/uploads \
    PROFORMA_CACHE_DIR=/data/cache \
    PROFORMA_MODELS_DIR=/data/models \
    PROFORMA_TEMP_DIRECTORY=/duckdb-tmp

RUN apt-get update \
    && apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first (cached while only sources change), then the sources.
COPY pyproject.toml Makefile README.md ./
RUN python -m venv .venv \
    && .venv/bin/pip install -q --upgrade pip \
    && if [ -n "$TORCH_INDEX_URL" ]; then \
         .venv/bin/pip install -q torch==2.13.0 --index-url "$TORCH_INDEX_URL"; \
       fi
COPY app ./app
COPY models ./models
COPY migrations ./migrations
COPY sql ./sql
COPY reference ./reference
RUN make setup && mkdir -p /data /duckdb-tmp

VOLUME ["/data", "/duckdb-tmp"]
EXPOSE 8000
# Migrations run first, then the demo (synthetic panel, build, baselines, models, scoring)
# is served on 0.0.0.0:8000 by ONE worker (the warehouse's only writer).
CMD ["sh", "-c", "proforma migrate && exec proforma demo --host 0.0.0.0 --port 8000"]
