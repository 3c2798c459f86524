"""Settings, read from the environment (prefix ``DEEPCRITICAL_``) and from the CLI.

Secrets are :class:`pydantic.SecretStr`: their values never appear in ``repr``, logs, traces or
report metadata (use :meth:`Settings.public_dict` for anything that is stored or shown).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_SOURCES = ["pubmed", "trials", "europepmc", "openalex", "web"]
ALL_SOURCES = [*DEFAULT_SOURCES, "local"]

MAX_RECORD_CHARS = 200_000
EmbeddingBackend = Literal["auto", "torch", "onnx-int8"]
"""The default of ``Settings.max_record_chars``: characters of text kept per record (a
PubMed abstract is rarely over 5,000; a full paper's text is about 50,000)."""

MAX_EVIDENCE_CHARS = 20_000
"""The default of ``Settings.max_evidence_chars``: characters of an item's text a run keeps
(the web source keeps 4,000 of a page; a structured abstract or a trial summary fits whole)."""

REDACTED = "[redacted]"
SECRET_QUERY_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "auth",
        "password",
        "passwd",
        "secret",
        "sig",
        "signature",
        "code",
    }
)
"""Query parameters whose values :func:`redact_url` hides (compared case-insensitively)."""


def redact_url(url: str) -> str:
    """``url`` without credentials, safe to store, show, export or log.

    The userinfo (``user:password@``) is removed and the value of every query parameter
    named in :data:`SECRET_QUERY_KEYS` (``api_key``, ``token``, ``key``...) becomes
    ``[redacted]``; everything else is kept. Text that does not parse as a URL with a host is
    returned unchanged, unless it holds an ``@`` before its first ``/`` (then the part
    before that ``@`` is dropped). Never raises.

    >>> redact_url("http://user:pw@host:8080/v1?api_key=s&x=1")
    'http://host:8080/v1?api_key=%5Bredacted%5D&x=1'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, REDACTED if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs]
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_model_spec(spec: str) -> str:
    """The model spec ``spec`` (``Settings.llm``) with :func:`redact_url` applied to the base
    URL of an ``openai-compatible:MODEL@URL`` spec; other specs are returned unchanged.

    This is the one form of a model spec that is stored (``Settings.public_dict``, the run
    database), shown (report footer, web app, CLI) or logged. Never raises.
    """
    provider, sep, rest = spec.partition(":")
    if not sep or provider.strip().lower() != "openai-compatible":
        return spec
    model, at, url = rest.partition("@")
    if not at:
        return spec
    return f"{provider}:{model}@{redact_url(url.strip())}"


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/deepcritical`` or ``~/.local/share/deepcritical``."""
    import os

    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deepcritical"


ASSUMED_CONTEXT_TOKENS = 4096
"""The context window assumed when neither the setting nor the server gives one."""

MIN_OUTPUT_TOKENS = 256
MAX_DEFAULT_OUTPUT_TOKENS = 2048
"""The bounds of the default ``max_tokens`` (:meth:`Settings.output_token_bound`)."""


class Settings(BaseSettings):
    """All knobs of a research run. Units are in the field names (seconds, characters)."""

    model_config = SettingsConfigDict(
        env_prefix="DEEPCRITICAL_", env_file=".env", extra="ignore", validate_default=True
    )

    # --- model -----------------------------------------------------------------------------
    llm: str = Field(
        default="none",
        description=(
            "Model spec: 'none' (extractive, no model), 'openai:gpt-4o', "
            "'anthropic:claude-sonnet-4-5', or 'openai-compatible:<model>@<base_url>'."
        ),
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DEEPCRITICAL_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("DEEPCRITICAL_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    )
    openai_compatible_api_key: SecretStr | None = None
    model_base_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Base URLs of openai-compatible model servers the operator trusts with "
        "openai_compatible_api_key, besides the one in `llm` (comma-separated or a JSON list). "
        "A web visitor may pick them without a key; any other URL a visitor types needs the "
        "visitor's own key.",
    )
    model_host_allowlist: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Private hosts ('host' or 'host:port', comma-separated) a web visitor's "
        "openai-compatible URL may point at, e.g. '127.0.0.1:8080' for the operator's local "
        "llama.cpp; every other visitor URL must resolve to public addresses only.",
    )
    llm_timeout_seconds: float = Field(default=120.0, gt=0)
    llm_retries: int = Field(default=2, ge=0)
    structured_output: Literal["auto", "json_schema", "json_object", "tool", "prompted"] = Field(
        default="auto",
        description="How roles ask for structured output: 'json_schema' (OpenAI response_format, "
        "grammar-constrained on vLLM/Ollama/llama-server), 'json_object' (llama-cpp-python's "
        "json_object+schema form), 'tool' (a tool call), 'prompted' (schema in the prompt, "
        "lenient parsing), or 'auto': tool calls for OpenAI/Anthropic; an openai-compatible "
        "endpoint is probed once per process (json_schema, json_object, tool, prompted).",
    )
    llm_max_output_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Most tokens one model answer may have (roles and the Magentic manager); "
        "unset: a quarter of the context window (llm_context_tokens, or 4,096 when the server "
        "does not say), between 256 and 2,048. Caps a small local model that rambles; a cut "
        "answer is retried like any invalid one.",
    )
    llm_context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="Context window of the model in tokens; unset: read from the "
        "openai-compatible server when it says (llama.cpp), else 4,096 assumed for an "
        "openai-compatible server and no check for OpenAI/Anthropic. Prompts are sized to fit "
        "(evidence trimmed first); one that cannot fit is refused with a clear error.",
    )

    # --- run limits (stop rules are enforced in code) ---------------------------------------
    orchestrator: Literal["iterative", "magentic"] = "iterative"
    max_rounds: int = Field(default=3, ge=1, le=20)
    max_sources: int = Field(default=60, ge=1, description="Evidence items that end gathering.")
    time_budget_seconds: float = Field(default=600.0, gt=0)
    results_per_query: int = Field(default=10, ge=1, le=100)
    max_queries_per_round: int = Field(default=4, ge=1, le=20)
    max_questions: int = Field(
        default=3, ge=0, le=10, description="Sub-questions the LLM planner may add."
    )
    queries_per_question: int = Field(
        default=2, ge=1, le=5, description="First-round queries per sub-question."
    )
    pubmed_date_from: int | None = Field(
        default=None,
        ge=1800,
        le=3000,
        description="Earliest publication year: PubMed queries get a date filter "
        '("2015"[dp] : "3000"[dp]).',
    )
    search_filters: dict[str, Any] = Field(
        default_factory=dict,
        description="The search filters every run's plan starts with: the fields of "
        "deepcritical.models.SearchFilters as JSON (published_from, published_to, languages, "
        "designs, trial_phases, trial_statuses, added_since); {} for none. Validated by "
        "api.research before the run starts; stored with the run's settings, so a resumed "
        "run searches within the same filters.",
    )
    max_question_chars: int = Field(default=2000, ge=10)

    # --- evidence store and report -----------------------------------------------------------
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    near_duplicate_threshold: float = Field(default=0.97, gt=0.0, le=1.0)
    checklist_assign_threshold: float = Field(default=0.35, ge=-1.0, le=1.0)
    report_max_evidence: int = Field(default=12, ge=1, le=100)
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    grounding: bool = Field(
        default=True,
        description="Check every cited sentence of the report against its sources "
        "(claim-level grounding); unsupported sentences are removed.",
    )
    grounding_threshold: float = Field(
        default=0.65,
        ge=-1.0,
        le=1.0,
        description="Cosine similarity (all-MiniLM-L6-v2) at which a source passage supports "
        "a sentence; see deepcritical.report.grounding.DEFAULT_THRESHOLD.",
    )
    grounding_rewrites: int = Field(
        default=5,
        ge=0,
        le=50,
        description="Unsupported sentences offered to the LLM rewriter per report (with a "
        "model only; 0: unsupported sentences are always removed).",
    )

    # --- sources ---------------------------------------------------------------------------
    sources: list[str] = Field(default_factory=lambda: list(DEFAULT_SOURCES))
    data_dir: Path = Field(default_factory=default_data_dir)
    corpus_dir: Path | None = Field(
        default=None, description="Local corpus directory; defaults to <data_dir>/corpus."
    )
    embedding_backend: EmbeddingBackend = Field(
        default="auto",
        description="How the local corpus embeds its records and queries: 'torch' (fp32 "
        "sentence-transformers), 'onnx-int8' (the same model exported to ONNX and quantised "
        "to int8, reading each record's first 128 word pieces; about 6x faster on a CPU; "
        "exported once into ~/.cache/deepcritical/onnx, "
        "falls back to torch with a warning when it cannot be), or 'auto': what an existing "
        "corpus was built with, else 'onnx-int8'. Runs' screening and evidence store use the "
        "same model's fp32 ONNX export (torch's vectors to float rounding, on which their "
        "thresholds are calibrated, without torch in memory), or torch itself under 'torch'.",
    )
    corpus_url: SecretStr | None = Field(
        default=None,
        description="URL of a Chroma server (`chroma run --path DIR --host H --port P`) that "
        "holds the local corpus's vectors, e.g. http://127.0.0.1:8000, so several machines "
        "search one corpus; the corpus directory (documents and BM25 index) must then be on a "
        "path every machine mounts. Default: vectors embedded in the corpus directory. "
        "Secret: it may hold a token (http://:TOKEN@host:port).",
    )
    max_record_chars: int = Field(
        default=MAX_RECORD_CHARS,
        ge=1000,
        description="Characters of text kept per corpus record: a record over it (title, "
        "abstract and metadata together) is cut at a sentence or word boundary when it is "
        "imported (counted in the import summary).",
    )
    max_evidence_chars: int = Field(
        default=MAX_EVIDENCE_CHARS,
        ge=1000,
        description="Characters of text a run keeps of each item a source returns (its "
        "content, and its title), cut at a sentence or word boundary: every step reads, "
        "splits and embeds each item's sentences, several times per run.",
    )
    max_full_texts: int = Field(
        default=10,
        ge=0,
        description="Open-access full texts (JATS from Europe PMC or PMC) read per run, the "
        "most relevant on-topic items with a PMCID first; 0 reads none. Only runs that search "
        "an online source fetch them; a local corpus holds the full texts it imported.",
    )
    citation_seeds: int = Field(
        default=5,
        ge=0,
        description="Citation tracking (snowballing), once per run: the most relevant "
        "on-topic records with a PMID or DOI whose references and citing papers are followed "
        "(OpenAlex, PubMed elink, the JATS reference lists of full texts read); 0 disables "
        "it. Only runs searching PubMed or OpenAlex track citations.",
    )
    citation_candidates: int = Field(
        default=50,
        ge=0,
        description="Records citation tracking may add to a run (the most relevant to the "
        "question, within max_sources); they are de-duplicated and screened like search "
        "results. 0 disables citation tracking.",
    )
    model_appraisals: int = Field(
        default=0,
        ge=0,
        description="Evidence items per run whose study record (sample size, PICO, effect "
        "estimates) a model reads, the most relevant new on-topic items first, each value "
        "checked verbatim against the source; 0: rules only (every item is read by rules "
        "in any case). Only with a model (--llm).",
    )
    http_timeout_seconds: float = Field(default=20.0, gt=0)
    http_retries: int = Field(default=3, ge=1)
    ncbi_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DEEPCRITICAL_NCBI_API_KEY", "NCBI_API_KEY")
    )
    ncbi_email: str | None = None
    ncbi_tool: str = "deepcritical"
    source_base_urls: dict[str, str] = Field(
        default_factory=dict,
        description="Source name -> API root replacing the public one (mirrors, test stubs), "
        'e.g. DEEPCRITICAL_SOURCE_BASE_URLS=\'{"pubmed": "http://127.0.0.1:8080/entrez/eutils"}\'.',
    )

    # --- durable run state (deepcritical.state) ------------------------------------------------
    database_url: SecretStr | None = Field(
        default=None,
        description="SQLAlchemy URL of the run database (e.g. postgresql+psycopg://u:p@host/db); "
        "default: the SQLite file <data_dir>/deepcritical.db. Secret: it may hold a password.",
    )
    persist_runs: bool = Field(default=True, description="Record every run (trace, resume).")
    cache_ttl_seconds: float = Field(
        default=86400.0, ge=0, description="Age in seconds after which cached calls are redone."
    )
    jobs: bool = Field(
        default=False,
        description="The web app and its MCP tool run research as durable jobs on workers "
        "(deepcritical worker; see docs/jobs.md) instead of in the app's process.",
    )

    # --- the researcher's reviews (see docs/cli.md, "Reviewing the plan and the evidence") ----
    review_plan: bool = Field(
        default=False,
        description="Stop after planning with a plan_ready event and wait until the user "
        "approves (possibly edited), or cancels, the plan (api.approve_plan, runs approve-plan).",
    )
    review_evidence: bool = Field(
        default=False,
        description="Stop after gathering with an evidence_ready event (the screened evidence "
        "table) and wait for the user's include/exclude decisions (api.approve_evidence).",
    )
    review_timeout_seconds: float = Field(
        default=7 * 86400.0,
        gt=0,
        description="Seconds a run waits for a review before review_timeout_action applies (in "
        "jobs mode by the waiting job; in-process when a process next looks at the run).",
    )
    review_timeout_action: Literal["continue", "cancel"] = Field(
        default="continue",
        description="What a review that timed out does: continue with the plan or evidence as "
        "it stands, or cancel the run.",
    )

    @field_validator("sources", "model_base_urls", "model_host_allowlist", mode="before")
    @classmethod
    def _split_sources(cls, v: Any) -> Any:
        if isinstance(v, str) and v.lstrip().startswith("["):
            import json

            return json.loads(v)
        if isinstance(v, str):
            v = [s.strip() for s in v.split(",") if s.strip()]
        return v

    @field_validator("sources")
    @classmethod
    def _known_sources(cls, v: list[str]) -> list[str]:
        unknown = [s for s in v if s not in ALL_SOURCES]
        if unknown:
            raise ValueError(
                f"unknown source(s) {', '.join(unknown)}; choose from {', '.join(ALL_SOURCES)}"
            )
        if not v:
            raise ValueError(f"at least one source is needed; choose from {', '.join(ALL_SOURCES)}")
        return list(dict.fromkeys(v))

    @property
    def resolved_corpus_dir(self) -> Path:
        """The local corpus directory (``corpus_dir`` or ``<data_dir>/corpus``)."""
        return self.corpus_dir if self.corpus_dir is not None else self.data_dir / "corpus"

    @property
    def corpus_server_url(self) -> str | None:
        """``corpus_url`` in clear (it may hold a token), for the corpus's Chroma client only;
        ``None`` when the vectors are embedded in the corpus directory."""
        return self.corpus_url.get_secret_value() if self.corpus_url else None

    def output_token_bound(self) -> int:
        """The ``max_tokens`` every model call sends: ``llm_max_output_tokens`` when set, else
        a quarter of the context window (``llm_context_tokens``, or
        :data:`ASSUMED_CONTEXT_TOKENS` when unknown), at least
        :data:`MIN_OUTPUT_TOKENS` and at most :data:`MAX_DEFAULT_OUTPUT_TOKENS`. No call is
        ever left unbounded: a model that never stops is cut, and its answer retried."""
        if self.llm_max_output_tokens:
            return self.llm_max_output_tokens
        context = self.llm_context_tokens or ASSUMED_CONTEXT_TOKENS
        return max(MIN_OUTPUT_TOKENS, min(MAX_DEFAULT_OUTPUT_TOKENS, context // 4))

    def prompt_context_tokens(self) -> int | None:
        """The context window (tokens) prompts are sized to fit: ``llm_context_tokens`` when
        set (or read from the server), else :data:`ASSUMED_CONTEXT_TOKENS` for an
        ``openai-compatible`` server that does not say (a local model, often served with a
        small window: a longer prompt is an HTTP 400), else ``None``, no check (OpenAI's and
        Anthropic's models have windows of 128,000 tokens and more)."""
        if self.llm_context_tokens:
            return self.llm_context_tokens
        provider = self.llm.partition(":")[0].strip().lower()
        return ASSUMED_CONTEXT_TOKENS if provider == "openai-compatible" else None

    def public_dict(self) -> dict[str, Any]:
        """Settings safe to store or show: every secret field is dropped, credentials are
        removed from the model spec and every URL (:func:`redact_model_spec`,
        :func:`redact_url`), paths as strings."""
        secret = {
            name
            for name, field in type(self).model_fields.items()
            if "SecretStr" in repr(field.annotation)
        }
        out = {k: v for k, v in self.model_dump(mode="json").items() if k not in secret}
        out["llm"] = redact_model_spec(self.llm)
        out["model_base_urls"] = [redact_url(u) for u in self.model_base_urls]
        out["source_base_urls"] = {k: redact_url(v) for k, v in self.source_base_urls.items()}
        return out
