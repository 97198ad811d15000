# paretorag: two commands on a fresh machine.
#   make demo   set up .venv and index this project's documentation, then ask it two questions
#   make test   set up .venv with dev tools, then lint, type-check and run the whole suite
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test setup setup-dev lint typecheck bench results clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, pinned to the CPU build available here (a plain `torch` pulls GBs of CUDA)
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .
	touch $@

$(DEVSTAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,llamacpp]'
	touch $@

setup: $(STAMP)
setup-dev: $(DEVSTAMP)

demo: setup
	rm -rf demo-index
	$(BIN)/paretorag index README.md docs --index demo-index --methods vanilla
	$(BIN)/paretorag query "Which LLM backends can answer questions?" --index demo-index --method vanilla -k 3
	$(BIN)/paretorag query "What happens when indexing is killed halfway?" --index demo-index --method vanilla -k 3

lint: setup-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: setup-dev
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -q tests

bench: setup
	$(BIN)/python bench/bench_index_query.py

results: setup
	$(BIN)/python -m paretorag.eval.results_doc --data ../shared/data --docs docs

clean:
	rm -rf $(VENV) demo-index .pytest_cache .mypy_cache .ruff_cache
