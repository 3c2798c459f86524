"""Domain models shared by every level of DeepCritical; nothing here does I/O.

Sources and evidence (:mod:`._evidence`), their integrity flags (:mod:`._integrity`), the
plan and what the run forms from evidence (:mod:`._plan`), the report and the run's result
(:mod:`._report`), inline citation markers (:mod:`._markers`), full-text passages
(:mod:`._passages`) and the report's markdown rendering (:mod:`._markdown`). Every other
level imports from this package; it imports nothing from the rest of the project.
"""

from deepcritical.models._appraisal import (
    CERTAINTY_LABEL,
    Certainty,
    CertaintyLevel,
    EffectEstimate,
    ExtractedValue,
    StudyRecord,
    TextSpan,
    parse_number,
)
from deepcritical.models._evidence import (
    DERIVED_TITLE_MARK,
    SOURCE_LABELS,
    Citation,
    Evidence,
    Screening,
    SourceName,
    Stance,
    StudyDesign,
    utc_now,
)
from deepcritical.models._flow import RecordFlow, flow_lines
from deepcritical.models._integrity import (
    INTEGRITY_LABELS,
    IntegrityFlag,
    IntegrityKind,
    flag_labels,
    flags_from_publication_types,
    union_flags,
)
from deepcritical.models._markdown import grounding_appendix, render_markdown
from deepcritical.models._markers import CITATION_MARKER, marker_ids, numbered
from deepcritical.models._passages import SECTION_SEPARATOR, Passage, PassageKind
from deepcritical.models._plan import (
    PICO,
    ChecklistItem,
    ChecklistStatus,
    Hypothesis,
    JudgeAssessment,
    QuestionType,
    ReportLength,
    ReportPreferences,
    ResearchPlan,
    SubQuestion,
)
from deepcritical.models._report import (
    INTEGRITY_HEADING,
    CitationValidation,
    FlaggedRecord,
    GroundedClaim,
    GroundingCheck,
    LLMUsage,
    Reference,
    ReportMetadata,
    ReportSection,
    ResearchReport,
    RunResult,
    SoftwareEnvironment,
    SourceUsage,
    StopReason,
    SupportingQuote,
    UsageReport,
)
from deepcritical.models._words import error_text, plural, stop_reason_text

__all__ = [
    "CERTAINTY_LABEL",
    "CITATION_MARKER",
    "DERIVED_TITLE_MARK",
    "INTEGRITY_HEADING",
    "INTEGRITY_LABELS",
    "PICO",
    "SECTION_SEPARATOR",
    "SOURCE_LABELS",
    "Certainty",
    "CertaintyLevel",
    "ChecklistItem",
    "ChecklistStatus",
    "Citation",
    "CitationValidation",
    "EffectEstimate",
    "Evidence",
    "ExtractedValue",
    "FlaggedRecord",
    "GroundedClaim",
    "GroundingCheck",
    "Hypothesis",
    "IntegrityFlag",
    "IntegrityKind",
    "JudgeAssessment",
    "LLMUsage",
    "Passage",
    "PassageKind",
    "QuestionType",
    "RecordFlow",
    "Reference",
    "ReportLength",
    "ReportMetadata",
    "ReportPreferences",
    "ReportSection",
    "ResearchPlan",
    "ResearchReport",
    "RunResult",
    "Screening",
    "SoftwareEnvironment",
    "SourceName",
    "SourceUsage",
    "Stance",
    "StopReason",
    "StudyDesign",
    "StudyRecord",
    "SubQuestion",
    "SupportingQuote",
    "TextSpan",
    "UsageReport",
    "error_text",
    "flag_labels",
    "flags_from_publication_types",
    "flow_lines",
    "grounding_appendix",
    "marker_ids",
    "numbered",
    "parse_number",
    "plural",
    "render_markdown",
    "stop_reason_text",
    "union_flags",
    "utc_now",
]
