# DeepCritical: every set-up step lives here; a fresh machine needs only Python 3.11 and make.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
UV     := $(BIN)/uv
QUESTION ?= Does hippocampal atrophy on MRI predict cognitive decline?
CORPUS ?= ../shared/data/pubmedqa/corpus.jsonl
DATA_DIR ?= .deepcritical
# uv (the lock's tool) and the CPU build of torch: the same versions as in uv.lock (a test checks).
UV_VERSION    := 0.13.9
TORCH_VERSION := 2.13.0
# Extra arguments of `make lock`: LOCK_ARGS="--upgrade-package NAME" or LOCK_ARGS=--upgrade.
LOCK_ARGS ?=
IMAGE ?= deepcritical:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never
# llama-cpp-python (dev extra) compiles from source: the default native build crashes on CPUs
# other than the build machine's (illegal instruction); uv caches the built wheel
export CMAKE_ARGS := -DGGML_NATIVE=OFF

.PHONY: install install-runtime lockcheck lock system-deps postgresql demo test test-fast lint typecheck check bench clean browser requirements serve serve-scaled image

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(UV): | $(BIN)/activate
	$(PY) -m pip install --quiet uv==$(UV_VERSION)

## uv.lock must hold what pyproject.toml asks for (offline when it does); `make lock` mends it.
lockcheck: $(UV)
	@$(UV) lock --check --quiet || { \
	  echo "uv.lock does not match pyproject.toml: run \`make lock\` to re-resolve it (it also" \
	       "regenerates requirements.txt), then commit both." >&2; exit 1; }

## Two installs from the one lock. The runtime (`make demo`, `make serve`): the project's own
## dependencies only, nothing compiled (`--inexact` leaves a test install's extras in place).
## The test install (`make test`, `make check`, `make bench`): exactly uv.lock with the `dev`
## tools and the `local-llm` extra (llama-cpp-python, compiled from source, for the tests and
## benchmarks that start a real model server; `uv sync` removes what the lock does not list).
## Both compile to bytecode, as pip does, so no import compiles a module under pytest's
## warnings, then add torch $(TORCH_VERSION)+cpu with --no-deps: the lock holds torch and its
## pure-Python dependencies but not its CUDA packages, and the CPU build comes from this
## machine's pip index (add PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu elsewhere).
$(VENV)/.installed-runtime: pyproject.toml uv.lock | lockcheck
	$(UV) sync --frozen --inexact --no-install-package torch --compile-bytecode --quiet
	$(PY) -m pip install --quiet --no-deps torch==$(TORCH_VERSION)+cpu
	$(PY) -m pip check
	touch $@

$(VENV)/.installed: pyproject.toml uv.lock | lockcheck
	$(UV) sync --frozen --extra dev --extra local-llm --no-install-package torch --compile-bytecode --quiet
	$(PY) -m pip install --quiet --no-deps torch==$(TORCH_VERSION)+cpu
	$(PY) -m pip check
	touch $@ $(VENV)/.installed-runtime

install-runtime: $(VENV)/.installed-runtime

install: $(VENV)/.installed

## Re-resolves uv.lock (keeping locked versions unless pyproject.toml or LOCK_ARGS ask for
## others), then regenerates requirements.txt from it.
lock: $(UV)
	$(UV) lock $(LOCK_ARGS)
	$(MAKE) requirements

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
demo: install-runtime
	$(BIN)/deepcritical --data-dir $(DATA_DIR) corpus add $(CORPUS)
	$(BIN)/deepcritical --data-dir $(DATA_DIR) research "$(QUESTION)" --llm none --sources local --out report.md

## The rules that hold the code to its shape: lint (ruff, with complexity, blind-except and
## banned-import rules), formatting, types (mypy strict over src, tests, benchmarks, scripts), the
## import-linter contracts (the levels of docs/architecture.md; no import cycles) and hadolint
## on the Dockerfile (no Docker daemon needed). `install` first checks that uv.lock is current.
check: install
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/hadolint Dockerfile

## pytest-xdist: one pytest worker per core (-n auto; 2 here), whole files per worker
## (--dist loadfile: a file's module fixtures, such as its app server, start once).
PYTEST_WORKERS ?= auto
test: check $(if $(SKIP_SYSTEM_DEPS),,system-deps)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile

## Quick feedback while editing (under 3 minutes on 2 cores): the unit, state and benchmark tests, less
## those marked slow (the embedding model, a large corpus) or live. No lint, no integration,
## model-server or browser tests: `make test` (what CI runs) has them all.
test-fast: install
	$(BIN)/pytest tests/unit tests/state benchmarks/tests -m "not slow and not live" -q -n $(PYTEST_WORKERS)

lint: install
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: install
	$(BIN)/mypy

## Benchmarks print figures (main job on 20 PubMedQA questions; retrieval quality; source
## round time vs rate limits; jobs: throughput over 1, 2, 4 workers, job-path latency).
bench: install
	$(PY) -m benchmarks.pubmedqa_runs
	$(PY) -m benchmarks.retrieval
	$(PY) -m benchmarks.bench_import
	$(PY) -m benchmarks.bench_sources
	$(PY) -m benchmarks.bench_state_prompt
	$(PY) -m benchmarks.bench_jobs

## Debian's Chromium for the browser tests (tests/e2e drive /usr/bin/chromium with
## Playwright; Playwright's own browser download is never used). apt-get only when missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  echo "installing Debian's chromium (browser tests)"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	fi

## The Hugging Face Space's requirements.txt: the lock's runtime packages, exact versions, with
## the PyTorch CPU index (where pip finds torch==$(TORCH_VERSION)+cpu).
requirements: $(UV)
	$(UV) export --frozen --no-hashes --no-emit-project --no-annotate --emit-index-url \
	  --extra-index-url https://download.pytorch.org/whl/cpu --output-file requirements.txt --quiet

## The web app (and the deep_research MCP tool) on http://127.0.0.1:7860
serve: install-runtime
	$(BIN)/deepcritical --data-dir $(DATA_DIR) serve

## A local scaled deployment: PostgreSQL (Debian's, cluster kept in $(DATA_DIR)/scaled/postgres),
## the web app on http://127.0.0.1:7860 and WORKERS job workers, all on 127.0.0.1, sharing one
## run database; Ctrl-C (or SIGTERM) stops them all (scripts/serve_scaled.py).
WORKERS ?= 2
serve-scaled: install postgresql
	$(PY) -m scripts.serve_scaled --data-dir $(DATA_DIR) --workers $(WORKERS)

## The container image (needs a Docker daemon): the web app, built from uv.lock.
image:
	docker build --build-arg GIT_COMMIT="$$(git rev-parse HEAD 2>/dev/null)" -t $(IMAGE) .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
