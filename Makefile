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

.PHONY: install system-deps demo test lint typecheck check bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# torch==2.13.0 first: a local CPU build; otherwise pip pulls several GB of CUDA packages.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

## PostgreSQL server binaries for the state tests (Debian's postgresql; CI runs as root).
system-deps:
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
	$(BIN)/deepcritical --data-dir $(DATA_DIR) research "$(QUESTION)" --llm none --out report.md

test: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
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

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
