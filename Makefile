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

.PHONY: install demo test lint typecheck check bench clean browser requirements serve

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

## SKIP_BROWSER=1 skips installing Chromium (the browser tests then skip themselves).
test: install $(if $(SKIP_BROWSER),,browser)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: install
	$(BIN)/mypy

## Benchmarks print figures (retrieval quality on PubMedQA; source round time vs rate limits).
bench: install
	$(PY) -m benchmarks.bench_retrieval
	$(PY) -m benchmarks.bench_sources

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
