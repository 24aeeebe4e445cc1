# The two commands: `make run` serves the product, `make test` runs everything CI runs.
# Both keep their virtual environment in .venv/ and skip setup that is already done.

VENV  := .venv
PY    := $(VENV)/bin/python
# Reinstall when the dependency list changes.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
HOST  ?= 127.0.0.1
PORT  ?= 8000
export HOST PORT

.PHONY: run test setup browser lint typecheck pytest screenshots bench clean

run: setup
	$(PY) manage.py serve --host "$(HOST)" --port "$(PORT)"

test: setup browser lint typecheck pytest

# Debian's chromium for the browser tests (tests/e2e); only the tests need it, not `make run`.
browser:
	sh bin/setup-browser

setup: $(STAMP)

$(PY):
	"$$(sh bin/find-python)" -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $@

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
screenshots: setup browser
	SWITCHBOARD_SCREENSHOTS_DIR=docs/screenshots $(VENV)/bin/pytest tests/e2e $(PYTEST_ARGS)

bench: setup
	$(PY) bench/lifecycle.py

bench-mcp: setup
	$(PY) bench/mcp.py

clean:
	rm -rf $(VENV) build *.egg-info
