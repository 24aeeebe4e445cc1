# The two commands: `make run` serves the product, `make test` runs everything CI runs.
# Both keep their virtual environment in .venv/ and skip setup that is already done.

VENV  := .venv
PY    := $(VENV)/bin/python
# The installed set is the locked one (requirements.lock for `make run`, requirements-dev.lock for
# `make test`: exact versions with their hashes, written by `make lock`), so a fresh machine runs
# what CI tested. Reinstall when a lock changes: `make run` installs the runtime lock only
# (STAMP), `make test` the development lock (DEV_STAMP).
LOCK      := requirements.lock
DEV_LOCK  := requirements-dev.lock
SUM       := $(shell cat $(LOCK) $(DEV_LOCK) | cksum | cut -d' ' -f1)
STAMP     := $(VENV)/.installed-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)
PIP       := $(PY) -m pip --disable-pip-version-check
# The lock tool runs from a throwaway virtualenv: it is no dependency of the product.
UV_VERSION := 0.13.9
LOCK_FLAGS := --universal --python-version 3.12 --generate-hashes --quiet \
              --custom-compile-command "make lock" $(LOCK_ARGS)
HOST  ?= 127.0.0.1
PORT  ?= 8000
export HOST PORT

.PHONY: run test setup setup-dev lock browser pgbouncer lint typecheck pytest screenshots bench clean

run: setup
	$(PY) manage.py serve --host "$(HOST)" --port "$(PORT)"

test: setup-dev browser pgbouncer lint typecheck pytest

# Debian's chromium for the browser tests (tests/e2e); only the tests need it, not `make run`.
browser:
	sh bin/setup-browser

# Debian's pgbouncer for the tests behind a transaction pooler (tests/switchboard/test_pooler.py);
# when it cannot be installed those tests are skipped, saying why.
pgbouncer:
	sh bin/setup-pgbouncer

setup: $(STAMP)

setup-dev: $(DEV_STAMP)

$(PY):
	"$$(sh bin/find-python)" -m venv $(VENV)

# The product's dependencies: what `make run` needs. Skipped when the dev install (a superset)
# is current.
$(STAMP): $(LOCK) pyproject.toml | $(PY)
	$(PIP) install --quiet --require-hashes -r $(LOCK)
	$(PIP) install --quiet --no-deps .
	rm -f $(VENV)/.installed-[0-9]*
	touch $@

# Everything `make test` runs as well: pytest, ruff, mypy, Playwright… (pyproject's [dev]).
$(DEV_STAMP): $(DEV_LOCK) pyproject.toml | $(PY)
	$(PIP) install --quiet --require-hashes -r $(DEV_LOCK)
	$(PIP) install --quiet --no-deps .
	rm -f $(VENV)/.installed-*
	touch $(STAMP) $@

# Re-resolve both locks from pyproject.toml after a dependency change (versions already locked
# stay where pyproject allows them; `make lock LOCK_ARGS=--upgrade` moves everything to the
# newest allowed). The runtime lock is resolved inside the development lock, so the two agree.
lock:
	tool="$$(mktemp -d)" && trap 'rm -rf "$$tool"' EXIT && \
	"$$(sh bin/find-python)" -m venv "$$tool" && \
	"$$tool/bin/pip" install --quiet --disable-pip-version-check "uv==$(UV_VERSION)" && \
	"$$tool/bin/uv" pip compile pyproject.toml --extra dev $(LOCK_FLAGS) -o $(DEV_LOCK) && \
	"$$tool/bin/uv" pip compile pyproject.toml $(LOCK_FLAGS) -c $(DEV_LOCK) -o $(LOCK)

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck:
	$(VENV)/bin/mypy

# One pytest worker per core (pytest-xdist), a file to a worker: each worker has a test database
# of its own (test_<name>_gw0, ...) and a file's module fixtures and order stay together.
# PYTEST_WORKERS=0 runs in this process alone.
PYTEST_WORKERS ?= auto
pytest:
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The browser tests only, writing their screenshots over the committed ones that
# docs/guides/board.md shows (other runs write them to .data/screenshots/, outside git).
screenshots: setup-dev browser
	SWITCHBOARD_SCREENSHOTS_DIR=docs/screenshots $(VENV)/bin/pytest tests/e2e $(PYTEST_ARGS)

bench: setup-dev
	$(PY) bench/lifecycle.py

bench-mcp: setup-dev
	$(PY) bench/mcp.py

clean:
	rm -rf $(VENV) build *.egg-info
