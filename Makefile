# `make demo` and `make test` do all set-up themselves on a fresh machine.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# Re-install whenever pyproject.toml changes.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-10)
PYTEST_ARGS ?=

.PHONY: setup demo test lint bench clean serve browser wheel postgres

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The exact CPU build; it lies on this machine's disk (a bare `torch` pulls CUDA).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

demo: setup
	$(VENV)/bin/proforma demo

test: setup browser postgres
	PROFORMA_REQUIRE_BROWSER=1 PROFORMA_REQUIRE_POSTGRES=1 $(PY) -m pytest -q $(PYTEST_ARGS)

# Debian's headless Chromium and its driver for the browser test (tests/api); CI runs
# as root on a fresh Debian machine.
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver; }

# Debian's PostgreSQL server (and openssl) for the WRDS source's end-to-end tests
# (tests/foundation/test_found_wrds_postgres.py starts a throwaway cluster; nothing is
# left running and no system cluster is used).
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && command -v openssl >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends postgresql openssl; }

# mypy checks the packages named in pyproject.toml ([tool.mypy] files).
lint: setup
	$(VENV)/bin/ruff check proforma/__init__.py app models contracts client tests bench tools docs/examples
	$(VENV)/bin/ruff format --check proforma/__init__.py app models contracts client tests bench tools docs
	$(VENV)/bin/mypy

serve: setup
	$(VENV)/bin/proforma serve

# The one distribution (package `proforma`, data included) into dist/; the Dockerfile
# builds the same wheel from its build context.
wheel: setup
	$(PY) -m pip wheel -q --no-deps --no-build-isolation --wheel-dir dist .

clean:
	rm -rf $(VENV) data dist build .pytest_cache
