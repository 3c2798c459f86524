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

.PHONY: install demo test lint typecheck check bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# torch==2.13.0 first: a local CPU build; otherwise pip pulls several GB of CUDA packages.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

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

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
