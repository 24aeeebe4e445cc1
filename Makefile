# The two commands: `make run` serves the product, `make test` runs everything CI runs.
# Both keep their virtual environment in .venv/ and skip setup that is already done.

VENV  := .venv
PY    := $(VENV)/bin/python
# Reinstall when the dependency list changes: `make run` installs the runtime dependencies only
# (STAMP), `make test` the development tools as well (DEV_STAMP).
SUM       := $(shell cksum pyproject.toml | cut -d' ' -f1)
STAMP     := $(VENV)/.installed-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)
HOST  ?= 127.0.0.1
PORT  ?= 8000
export HOST PORT

.PHONY: run test setup setup-dev browser lint typecheck pytest screenshots bench clean

run: setup
	$(PY) manage.py serve --host "$(HOST)" --port "$(PORT)"

test: setup-dev browser lint typecheck pytest

# Debian's chromium for the browser tests (tests/e2e); only the tests need it, not `make run`.
browser:
	sh bin/setup-browser

setup: $(STAMP)

setup-dev: $(DEV_STAMP)

$(PY):
	"$$(sh bin/find-python)" -m venv $(VENV)

# The product's dependencies: what `make run` needs. Skipped when the dev install (a superset)
# is current.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check .
	rm -f $(VENV)/.installed-[0-9]*
	touch $@

# Everything `make test` runs as well: pytest, ruff, mypy, Playwright… (pyproject's [dev]).
$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP) $@

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck:
	$(VENV)/bin/mypy

pytest:
	$(VENV)/bin/pytest $(PYTEST_ARGS)

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
