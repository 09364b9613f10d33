# ProForma-20Q: the benchmark service and its demo in one image.
# The project installs exactly as on a developer machine (`make setup`), into /app/.venv.
#
# Build arguments (docker-compose.yml passes them from the environment):
#   BASE_IMAGE        any Debian bookworm image with Python 3.11, or without it (then
#                     python3, python3-venv and make come from its apt sources); e.g. a
#                     base made locally with debootstrap where no registry can be reached
#                     (bench/compose_check.py builds one)
#   TORCH_INDEX_URL   PyTorch's CPU-only wheel index: the default PyPI wheel bundles CUDA
#                     (several GB) that the service never uses
#   TORCH_FIND_LINKS  a folder URL holding the CPU wheel (torch-2.13.0+cpu-...whl), used
#                     instead of TORCH_INDEX_URL when set (a machine with the wheel on disk
#                     but no route to the index serves the folder over HTTP)
# With both torch arguments empty, torch comes from PyPI (the CUDA build).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX_URL="https://download.pytorch.org/whl/cpu"
ARG TORCH_FIND_LINKS=""

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

# Only what the base lacks: make, and Debian's Python 3.11 with venv where the base has none.
RUN set -e; need=""; \
    command -v make >/dev/null || need="$need make"; \
    python3 -c "import ensurepip, venv" 2>/dev/null || need="$need python3 python3-venv"; \
    if [ -n "$need" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $need ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app
# Dependencies first (cached while only sources change), then the sources.
COPY pyproject.toml Makefile README.md ./
RUN python3 -m venv .venv \
    && .venv/bin/pip install -q --upgrade pip \
    && if [ -n "$TORCH_FIND_LINKS" ]; then \
         .venv/bin/pip install -q torch==2.13.0 --find-links "$TORCH_FIND_LINKS"; \
       elif [ -n "$TORCH_INDEX_URL" ]; then \
         .venv/bin/pip install -q torch==2.13.0 --index-url "$TORCH_INDEX_URL"; \
       fi \
    && .venv/bin/python -c "import torch; print('torch', torch.__version__)"
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
