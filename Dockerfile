# ProForma-20Q: the benchmark service and its demo in one image, installed from the wheel
# the first stage builds out of the build context (the same wheel `pip wheel .` makes:
# code, SQL, migrations, reference data, templates, static files and the shipped Forma
# checkpoint are all package data). Nothing here lists the project's folders: the context
# is what .dockerignore leaves, and tests/packaging checks that it holds all the wheel
# needs.
#
# Build arguments (docker-compose.yml passes them from the environment):
#   BASE_IMAGE        any Debian bookworm image with Python 3.11, or without it (then
#                     python3 and python3-venv come from its apt sources); e.g. a base made
#                     locally with debootstrap where no registry can be reached
#                     (bench/compose_check.py builds one)
#   TORCH_INDEX_URL   PyTorch's CPU-only wheel index: the default PyPI wheel bundles CUDA
#                     (several GB) that the service never uses
#   TORCH_FIND_LINKS  a folder URL holding the CPU wheel (torch-2.13.0+cpu-...whl), used
#                     instead of TORCH_INDEX_URL when set (a machine with the wheel on disk
#                     but no route to the index serves the folder over HTTP)
# With both torch arguments empty, torch comes from PyPI (the CUDA build).
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS python
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# Only what the base lacks: Debian's Python 3.11 with venv where the base has none.
RUN set -e; \
    if ! python3 -c "import ensurepip, venv" 2>/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
        ca-certificates && rm -rf /var/lib/apt/lists/*; \
    fi

# Stage 1: the wheel, from the whole build context, and its dependency list (a file whose
# content, not pyproject.toml's, keys the cache of the dependency layer below): the core's
# and the `all` extra's, the extras that name other extras (proforma[...]) expanded.
FROM python AS wheel
WORKDIR /src
COPY . .
RUN python3 -m venv /tmp/build \
    && /tmp/build/bin/pip install -q --upgrade pip \
    && /tmp/build/bin/pip wheel -q --no-deps --wheel-dir /wheels . \
    && ls /wheels/proforma-*.whl \
    && python3 -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
x = p['optional-dependencies']; \
f = lambda e: [d for r in x[e] for d in (sum((f(n) for n in r[9:-1].split(',')), []) \
               if r.startswith('proforma[') else [r])]; \
print('\n'.join(dict.fromkeys(p['dependencies'] + f('all'))))" > /wheels/requirements.txt

# Stage 2: the service, the wheel installed into /opt/proforma (outside any checkout).
FROM python
ARG TORCH_INDEX_URL="https://download.pytorch.org/whl/cpu"
ARG TORCH_FIND_LINKS=""
ENV PATH="/opt/proforma/bin:${PATH}" \
    PROFORMA_WAREHOUSE=/data/warehouse.duckdb \
    PROFORMA_PUBLIC_SNAPSHOT=/data/public.duckdb \
    PROFORMA_UPLOAD_DIR=/data/uploads \
    PROFORMA_CACHE_DIR=/data/cache \
    PROFORMA_MODELS_DIR=/data/models \
    PROFORMA_REPORT_DIR=/data/report \
    PROFORMA_TEMP_DIRECTORY=/duckdb-tmp
# Dependencies first (cached while only the sources change): the CPU torch, then the
# dependency list of pyproject.toml, as the wheel stage wrote it.
RUN python3 -m venv /opt/proforma \
    && /opt/proforma/bin/pip install -q --upgrade pip \
    && if [ -n "$TORCH_FIND_LINKS" ]; then \
         /opt/proforma/bin/pip install -q torch==2.13.0 --find-links "$TORCH_FIND_LINKS"; \
       elif [ -n "$TORCH_INDEX_URL" ]; then \
         /opt/proforma/bin/pip install -q torch==2.13.0 --index-url "$TORCH_INDEX_URL"; \
       fi
COPY --from=wheel /wheels/requirements.txt /tmp/requirements.txt
RUN /opt/proforma/bin/pip install -q -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY --from=wheel /wheels /tmp/wheels
RUN /opt/proforma/bin/pip install -q "$(ls /tmp/wheels/proforma-*.whl)[all]" \
    && rm -rf /tmp/wheels \
    && mkdir -p /data /duckdb-tmp /srv/proforma \
    && proforma --help >/dev/null

# An empty working folder: everything the service reads comes from the package, and
# everything it writes goes to /data (the settings above).
WORKDIR /srv/proforma
VOLUME ["/data", "/duckdb-tmp"]
EXPOSE 8000
# Migrations run first, then the demo (synthetic panel, build, baselines, models, scoring)
# is served on 0.0.0.0:8000 by ONE worker (the warehouse's only writer).
CMD ["sh", "-c", "proforma migrate && exec proforma demo --host 0.0.0.0 --port 8000"]
