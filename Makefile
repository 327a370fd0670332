# The two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install run test lint format clean bench fuzz inspector

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever requirements.txt changes.
$(STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

# The MCP Inspector CLI (tests/gateway/test_inspector.py): pinned in tools/inspector/package-lock.json,
# Node 22 included. Needs npm; without it the inspector test says so and is skipped.
INSPECTOR := tools/inspector/node_modules/.bin/mcp-inspector
$(INSPECTOR): tools/inspector/package-lock.json
	npm ci --prefix tools/inspector --no-audit --no-fund --loglevel=error
	touch $(INSPECTOR)

inspector: $(INSPECTOR)

run: install
	$(PY) manage.py serve

# In parallel: one test database per worker process (tests/conftest.py names them by pid).
TEST_WORKERS ?= auto
test: install
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory inspector; fi
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# Schemathesis over the whole OpenAPI document (agent key and operator key), FUZZ_EXAMPLES per
# operation and key; prints how many requests were sent and how many answered 5xx.
FUZZ_EXAMPLES ?= 1000
fuzz: install
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/api_fuzz -q -s -p no:logging $(PYTEST_ARGS)

bench: install
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) -m bench $(BENCH_ARGS)

# Ruff, no model change without its migration, and mypy: strict modules clean, the rest no worse than
# tools/mypy-baseline.txt (see tools/mypy_baseline.py). CI runs it before the tests.
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run --noinput
	$(PY) tools/mypy_baseline.py

format: install
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache tools/inspector/node_modules
