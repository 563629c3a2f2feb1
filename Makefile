# strata: `make run` starts the whole system on loopback; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck layers protos protos-check unit integration e2e bench clean

# pip is quiet and takes a minute or so; say what is happening before it starts.
$(STAMP): pyproject.toml
	@echo "strata: creating $(VENV) and installing packages (a minute or so, once)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m strata.dev up

protos: $(STAMP)
	$(PY) protos/generate.py

protos-check: $(STAMP)
	$(PY) protos/generate.py --check

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The import-linter contracts in pyproject.toml; --no-cache writes nothing into the tree.
layers: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache --no-logo

test: $(STAMP) protos-check lint typecheck layers
	$(PY) -m pytest

unit: $(STAMP)
	$(PY) -m pytest tests/unit

bench: $(STAMP)
	$(PY) bench/api.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
