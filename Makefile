# Every target bootstraps its own virtualenv, so a fresh machine needs only python3.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install test lint typecheck unit test-slow demo bench server clean bytecode

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The workflow sandbox re-imports the workflow module for every run it starts; without
# bytecode (PYTHONDONTWRITEBYTECODE is common in CI and containers) that is a full compile
# from source each time. Writing the .pyc files once makes those imports cheap.
bytecode: $(STAMP)
	$(PY) -m compileall -q src bench

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache src tests bench examples
	$(VENV)/bin/ruff format --no-cache --check src tests bench examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: bytecode
	$(VENV)/bin/pytest -q

## make test: lint, type check and the whole test suite (the README's test command).
test: lint typecheck unit

## make test-slow: the reliability tests behind the `slow` marker (over ~20 s each).
test-slow: bytecode
	$(VENV)/bin/pytest -q -m slow

## make demo: the main job on the embedded Temporal dev server.
demo: bytecode
	$(VENV)/bin/durable-tools demo $(DEMO_ARGS)

## make bench: benchmarks vs a bare Temporal loop; table + bench/results/latest.json.
## BENCH_ARGS=--quick for a ~1 minute version, --address HOST:PORT for another server.
bench: bytecode
	$(PY) -m bench $(BENCH_ARGS)

server: $(STAMP)
	$(VENV)/bin/durable-tools server

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
