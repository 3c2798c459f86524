# DeepCritical: every set-up step lives here; a fresh machine needs only Python 3.11 and make.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
QUESTION ?= Does hippocampal atrophy on MRI predict cognitive decline?
CORPUS ?= ../shared/data/pubmedqa/corpus.jsonl
DATA_DIR ?= .deepcritical

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

.PHONY: install system-deps postgresql demo test lint typecheck check bench clean browser requirements serve

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# torch==2.13.0 first: a local CPU build; otherwise pip pulls several GB of CUDA packages.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

## Debian packages the tests need: PostgreSQL server binaries (state tests) and Chromium
## (browser tests); apt-get only when missing (CI runs as root). SKIP_SYSTEM_DEPS=1 skips it;
## the tests that need them then skip themselves.
system-deps: browser postgresql

postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "postgresql: present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	else \
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi

## The main job: import the PubMedQA corpus and research a question with no LLM.
demo: install
	$(BIN)/deepcritical --data-dir $(DATA_DIR) corpus add $(CORPUS)
	$(BIN)/deepcritical --data-dir $(DATA_DIR) research "$(QUESTION)" --llm none --sources local --out report.md

## The rules that hold the code to its shape: lint (ruff, with complexity, blind-except and
## banned-import rules), formatting, types (mypy strict over src, tests and benchmarks) and the
## import-linter contracts (the levels of docs/architecture.md; no import cycles).
check: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

test: check $(if $(SKIP_SYSTEM_DEPS),,system-deps)
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: install
	$(BIN)/mypy

## Benchmarks print figures (main job on 20 PubMedQA questions; retrieval quality; source
## round time vs rate limits).
bench: install
	$(PY) -m benchmarks.pubmedqa_runs
	$(PY) -m benchmarks.retrieval
	$(PY) -m benchmarks.bench_sources
	$(PY) -m benchmarks.bench_state_prompt

## Debian's Chromium for the browser tests (tests/e2e drive /usr/bin/chromium with
## Playwright; Playwright's own browser download is never used). apt-get only when missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  echo "installing Debian's chromium (browser tests)"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	fi

## The Hugging Face Space's requirements.txt, generated from pyproject.toml.
requirements: install
	$(PY) -m deepcritical.ui.space > requirements.txt

## The web app (and the deep_research MCP tool) on http://127.0.0.1:7860
serve: install
	$(BIN)/deepcritical --data-dir $(DATA_DIR) serve

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
