"""Bibliographic identifiers: normalisation, identifier keys and cross-source merging.

The same paper reaches a run from several sources (PubMed gives a PMID, Europe PMC a PMID, a
PMCID and a DOI, OpenAlex a DOI and an OpenAlex URL). Every identifier is normalised to one
canonical spelling and turned into a *key* (``pmid:123``, ``doi:10.1000/x``, ``pmcid:PMC1``,
``nct:NCT01234567``, ``url:https://...``); two records sharing any key are the same document
and :func:`merge_evidence` folds them into one evidence item.

Canonical forms (see :mod:`deepcritical.models`):

- PMID: digits, no leading zeros (``"123"``).
- PMCID: ``"PMC"`` + digits (``"PMC123"``).
- DOI: lower-case, without ``doi:`` / resolver prefix, starting with ``"10."``.
- NCT ID: ``"NCT"`` + 8 digits.
- URL: ``http``/``https`` only; lower-case scheme and host, no fragment, no default port, no
  trailing slash, no ``utm_*`` (or other click-tracking) query parameters.

Every ``normalize_*`` function returns ``None`` for ``None``, empty or unrecognisable input; none
of them raises. They accept a whole identifier in one of the documented spellings, not an
identifier buried in free text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from deepcritical.models import (
    DOI_PREFIX,
    DOI_WHOLE,
    NCT_ID,
    Citation,
    Evidence,
    SourceName,
    clean_doi,
    union_flags,
)

__all__ = [
    "KEY_KINDS",
    "canonical_citation",
    "identifier_keys",
    "merge_evidence",
    "normalize_doi",
    "normalize_nct",
    "normalize_pmcid",
    "normalize_pmid",
    "normalize_url",
    "primary_key",
    "strong_identifiers",
]

KEY_KINDS: tuple[str, ...] = ("pmid", "doi", "pmcid", "nct", "url")
"""Identifier kinds in priority order; a key is ``f"{kind}:{value}"``."""

_STRONG_KINDS: tuple[str, ...] = ("pmid", "doi", "pmcid", "nct")

_PMID_RE = re.compile(r"^(?:(?:pmid|pubmed|med)\s*[:/#]?\s*)?(\d{1,10})$", re.IGNORECASE)
_PMCID_RE = re.compile(r"^(?:pmcid\s*:?\s*)?pmc\s*(\d{1,10})(?:\.\d+)?$", re.IGNORECASE)
_NCT_RE = re.compile(r"^(?:nct\s*(?:id)?\s*:\s*)?nct\s*(\d{8})$", re.IGNORECASE)
_DOI_RE = re.compile(rf"^{DOI_WHOLE}$")
_DOI_PREFIX_RE = re.compile(rf"^{DOI_PREFIX}", re.IGNORECASE)
_NCT_IN_PATH_RE = re.compile(rf"(?<![A-Za-z0-9])({NCT_ID})(?![0-9])", re.IGNORECASE)
_SCHEME_RE = re.compile(r"^https?://", re.IGNORECASE)
_BARE_HOST_RE = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}/", re.IGNORECASE)
_TRACKING_PARAMS = frozenset({"fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid"})
_DOI_URL_TAILS = ("/abstract", "/full", "/pdf", "/epdf", "/fulltext", "/meta")


def _clean(s: str | int | None) -> str:
    if s is None:
        return ""
    return str(s).strip()


def _as_url(s: str) -> str | None:
    """``s`` as an absolute http(s) URL when it looks like one (a bare ``host/path`` gets https)."""
    if _SCHEME_RE.match(s):
        return s
    if _BARE_HOST_RE.match(s):
        return "https://" + s
    return None


# Complexity: one branch per publisher URL pattern.
def _ids_from_url(url: str) -> dict[str, str]:  # noqa: C901
    """Identifiers a URL names by its host and path (PubMed, PMC, Europe PMC, doi.org,
    ClinicalTrials.gov, publisher ``/doi/10.x/...`` pages). Kind -> normalised value."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return {}
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    segments = [unquote(p) for p in parts.path.split("/") if p]
    if host == "pubmed.ncbi.nlm.nih.gov" and segments:
        return _found("pmid", _pmid_value(segments[0]))
    if host == "ncbi.nlm.nih.gov" and len(segments) >= 2:
        if segments[0].lower() == "pubmed":
            return _found("pmid", _pmid_value(segments[1]))
        if segments[0].lower() == "pmc" and len(segments) >= 3:
            return _found("pmcid", _pmcid_value(segments[2]))
        return {}
    if host == "pmc.ncbi.nlm.nih.gov" and len(segments) >= 2:
        return _found("pmcid", _pmcid_value(segments[1]))
    if host == "europepmc.org" and segments:
        # /article/MED/123, /abstract/MED/123, /article/PMC/PMC123, /articles/PMC123
        if len(segments) >= 3 and segments[0].lower() in {"article", "abstract", "api"}:
            src, native = segments[1].upper(), segments[2]
            if src == "MED":
                return _found("pmid", _pmid_value(native))
            if src == "PMC":
                return _found("pmcid", _pmcid_value(native))
        elif len(segments) >= 2 and segments[0].lower() == "articles":
            return _found("pmcid", _pmcid_value(segments[1]))
        return {}
    if host in {"doi.org", "dx.doi.org"}:
        return _found("doi", _doi_value(unquote(parts.path.lstrip("/"))))
    if host.endswith("clinicaltrials.gov"):
        m = _NCT_IN_PATH_RE.search(parts.path)
        return {"nct": m.group(1).upper()} if m else {}
    path = unquote(parts.path)
    idx = path.lower().find("/doi/")
    if idx >= 0:
        rest = path[idx + len("/doi/") :]
        # publisher pages: /doi/10.x/y, /doi/full/10.x/y, /doi/abs/10.x/y
        start = rest.find("10.")
        if start >= 0 and "/" not in rest[:start].strip("/"):
            candidate = rest[start:].rstrip("/")
            for tail in _DOI_URL_TAILS:
                if candidate.lower().endswith(tail):
                    candidate = candidate[: -len(tail)]
            return _found("doi", _doi_value(candidate))
    return {}


def _found(kind: str, value: str | None) -> dict[str, str]:
    """``{kind: value}``, or ``{}`` when no value was read."""
    return {kind: value} if value else {}


def _id_digits(pattern: re.Pattern[str], s: str) -> str | None:
    """The digits ``pattern`` reads from ``s`` without leading zeros, or ``None``."""
    m = pattern.match(s.strip())
    return (m.group(1).lstrip("0") or None) if m else None


def _pmid_value(s: str) -> str | None:
    return _id_digits(_PMID_RE, s)


def _pmcid_value(s: str) -> str | None:
    digits = _id_digits(_PMCID_RE, s)
    return "PMC" + digits if digits else None


def _nct_value(s: str) -> str | None:
    m = _NCT_RE.match(s)
    return "NCT" + m.group(1) if m else None


def _normalized(s: str | int | None, kind: str, value: Callable[[str], str | None]) -> str | None:
    """The ``kind`` identifier ``s`` names: read from the URL when ``s`` is one (see
    :func:`_ids_from_url`), by ``value`` otherwise; ``None`` for empty input."""
    text = _clean(s)
    if not text:
        return None
    url = _as_url(text)
    if url is not None:
        return _ids_from_url(url).get(kind)
    return value(text)


def _doi_value(s: str) -> str | None:
    doi = s.strip().lstrip("([<\"'").strip()
    for _ in range(3):  # "doi: https://doi.org/10..." has two prefixes
        stripped = _DOI_PREFIX_RE.sub("", doi, count=1).strip()
        if stripped == doi:
            break
        doi = stripped
    doi = clean_doi(doi)
    return doi if _DOI_RE.match(doi) else None


def normalize_pmid(s: str | int | None) -> str | None:
    """Canonical PMID (digits, no leading zeros) or ``None``.

    Accepts ``"123"``, ``123``, ``"PMID: 123"``, ``"pmid:123"``, ``"pubmed/123"``, ``"MED/123"``
    and PubMed / Europe PMC URLs (``https://pubmed.ncbi.nlm.nih.gov/123/``,
    ``https://www.ncbi.nlm.nih.gov/pubmed/123``, ``https://europepmc.org/article/MED/123``).
    """
    return _normalized(s, "pmid", _pmid_value)


def normalize_pmcid(s: str | None) -> str | None:
    """Canonical PMCID (``"PMC"`` + digits, upper case) or ``None``.

    Accepts ``"PMC123"``, ``"pmc123"``, ``"PMCID: PMC123"`` (a version suffix ``.1`` is
    dropped) and PMC / Europe PMC URLs (``https://www.ncbi.nlm.nih.gov/pmc/articles/PMC123/``,
    ``https://pmc.ncbi.nlm.nih.gov/articles/PMC123/``, ``https://europepmc.org/article/PMC/PMC123``).
    Bare digits are rejected: without the prefix they cannot be told from a PMID.
    """
    return _normalized(s, "pmcid", _pmcid_value)


def normalize_doi(s: str | None) -> str | None:
    """Canonical DOI (lower case, starting with ``"10."``, containing ``/``) or ``None``.

    Strips ``doi:`` and resolver prefixes (``https://doi.org/``, ``http://dx.doi.org/``, with or
    without scheme), percent-encoding in resolver URLs, trailing sentence punctuation and
    unbalanced closing brackets. Publisher URLs with a ``/doi/10.x/y`` path are understood too.
    """
    return _normalized(s, "doi", _doi_value)


def normalize_nct(s: str | None) -> str | None:
    """Canonical ClinicalTrials.gov id (``"NCT"`` + 8 digits) or ``None``.

    Accepts ``"NCT01234567"``, ``"nct01234567"``, ``"NCT 01234567"`` and ClinicalTrials.gov URLs
    (``/study/NCT01234567``, ``/ct2/show/NCT01234567``).
    """
    return _normalized(s, "nct", _nct_value)


def normalize_url(s: str | None) -> str | None:
    """Canonical http(s) URL or ``None`` (other schemes, no host, invalid port).

    Lower-cases scheme and host, drops the fragment, the default port (80/443), trailing slashes
    of the path and ``utm_*`` / click-id query parameters; keeps path case and the order and
    encoding of the other query parameters. Inner spaces become ``%20``.
    """
    text = _clean(s)
    if not text or not _SCHEME_RE.match(text):
        return None
    text = text.replace(" ", "%20")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if not host:
        return None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host
    if port is not None and not (
        (scheme == "http" and port == 80) or (scheme == "https" and port == 443)
    ):
        netloc = f"{host}:{port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    path = parts.path.rstrip("/")
    params = [
        p
        for p in parts.query.split("&")
        if p
        and not p.split("=", 1)[0].lower().startswith("utm_")
        and p.split("=", 1)[0].lower() not in _TRACKING_PARAMS
    ]
    query = "&".join(params)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _ids_from_native_id(source: str, native: str) -> dict[str, str]:
    """Identifiers readable from a source's native id (``Citation.id``)."""
    text = native.strip()
    if not text:
        return {}
    url = _as_url(text)
    if url is not None:
        return _ids_from_url(url)
    found: dict[str, str] = {}
    digits_are_pmid = source in {SourceName.PUBMED, SourceName.LOCAL}
    pmid = _pmid_value(text) if (digits_are_pmid or not text.isdigit()) else None
    if pmid:
        found["pmid"] = pmid
    doi = _doi_value(text)
    if doi:
        found["doi"] = doi
    pmcid = _pmcid_value(text)
    if pmcid:
        found["pmcid"] = pmcid
    nct = normalize_nct(text)
    if nct:
        found["nct"] = nct
    return found


def _identifiers(citation: Citation) -> dict[str, str]:
    """Kind -> normalised value for every identifier a citation carries or implies.

    A dedicated field (``pmid``, ``doi``, ``pmcid``, ``nct_id``) wins; otherwise the value is
    derived from ``citation.id`` and then from ``citation.url``.
    """
    dedicated = {
        "pmid": normalize_pmid(citation.pmid),
        "doi": normalize_doi(citation.doi),
        "pmcid": normalize_pmcid(citation.pmcid),
        "nct": normalize_nct(citation.nct_id),
    }
    from_id = _ids_from_native_id(citation.source, citation.id)
    url_value = normalize_url(citation.url)
    from_url = _ids_from_url(url_value) if url_value else {}
    found: dict[str, str] = {}
    for kind in _STRONG_KINDS:
        value = dedicated[kind] or from_id.get(kind) or from_url.get(kind)
        if value:
            found[kind] = value
    url = url_value or normalize_url(citation.id)
    if url:
        found["url"] = url
    return found


def identifier_keys(citation: Citation) -> list[str]:
    """Every identifier key of ``citation``, in priority order PMID > DOI > PMCID > NCT > URL.

    Keys look like ``"pmid:123"``, ``"doi:10.1000/x"``, ``"pmcid:PMC1"``, ``"nct:NCT01234567"``,
    ``"url:https://example.org/a"``. At most one key per kind. When a dedicated field is empty
    (or unparseable) the identifier is derived from ``citation.id`` (a URL, ``PMID:``/``PMC``/
    ``NCT``/DOI spelling, or bare digits from the ``pubmed`` and ``local`` sources) and then from
    ``citation.url`` (PubMed, PMC, Europe PMC, doi.org, ClinicalTrials.gov, publisher ``/doi/``
    URLs). An empty list means the citation has no usable identifier.
    """
    found = _identifiers(citation)
    return [f"{kind}:{found[kind]}" for kind in KEY_KINDS if kind in found]


def primary_key(citation: Citation) -> str:
    """The highest-priority identifier key of ``citation`` (see :func:`identifier_keys`).

    Raises:
        ValueError: the citation has no usable identifier.
    """
    keys = identifier_keys(citation)
    if not keys:
        raise ValueError(
            f"citation from {citation.source!r} with id {citation.id!r} has no usable identifier "
            "(no PMID, DOI, PMCID, NCT ID or http(s) URL)"
        )
    return keys[0]


def strong_identifiers(citation: Citation) -> dict[str, str]:
    """Kind -> value of the authority identifiers (PMID, DOI, PMCID, NCT; not the URL)."""
    found = _identifiers(citation)
    return {k: v for k, v in found.items() if k in _STRONG_KINDS}


def canonical_citation(citation: Citation) -> Citation:
    """A copy of ``citation`` whose ``pmid``, ``doi``, ``pmcid`` and ``nct_id`` hold canonical
    values: normalised when parseable, filled from ``id``/``url`` when empty (a PubMed native id
    becomes ``pmid``, a ``https://doi.org/...`` URL becomes ``doi``). An unparseable value with
    nothing to replace it is kept as given. Other fields are unchanged."""
    ids = strong_identifiers(citation)
    return citation.model_copy(
        update={
            "pmid": ids.get("pmid") or citation.pmid,
            "doi": ids.get("doi") or citation.doi,
            "pmcid": ids.get("pmcid") or citation.pmcid,
            "nct_id": ids.get("nct") or citation.nct_id,
        }
    )


def _union(first: list[str], second: list[str]) -> list[str]:
    """Ordered union, duplicates compared case-insensitively (first spelling kept)."""
    seen: dict[str, str] = {}
    for item in [*first, *second]:
        norm = item.strip().casefold()
        if norm and norm not in seen:
            seen[norm] = item
    return list(seen.values())


def _more_precise_date(a: str | None, b: str | None) -> str | None:
    """``a`` unless missing, or ``b`` refines it (``2019`` -> ``2019-03-14``)."""
    if not a:
        return b
    if b and len(b) > len(a) and b.startswith(a):
        return b
    return a


def _open_access(old: bool | None, new: bool | None) -> bool | None:
    if old or new:
        return True
    return False if False in (old, new) else None


def _max_count(old: int | None, new: int | None) -> int | None:
    counts = [c for c in (old, new) if c is not None]
    return max(counts) if counts else None


def merge_evidence(existing: Evidence, new: Evidence) -> Evidence:
    """One evidence item holding the richest fields of two records of the same document.

    Neither argument is modified. The result keeps ``existing.id``, ``existing.citation.source``,
    ``citation.id``, ``retrieved_at`` and (when set) ``url``, ``query`` and title, and takes:

    - the longer ``content`` (existing on a tie), the longer author list;
    - every identifier either side has (PMID, DOI, PMCID, NCT ID; normalised; a value derived
      from ``id``/``url`` fills an empty field; the existing value wins a conflict);
    - ``journal``, ``year`` and ``date`` when missing (a more precise date with the same prefix
      wins; when ``existing`` is a preprint and ``new`` is not, the peer-reviewed venue wins);
    - the ordered union of ``sources``, ``mesh_terms``, ``publication_types`` and
      ``checklist_keys``; the maximum ``relevance``;
    - ``is_preprint`` only when both records say preprint (a peer-reviewed record wins);
    - the full text's ``passages`` when either side has them (``existing``'s when both do),
      so an abstract merged with the same paper's full text stays a full text;
    - ``open_access`` True when either record says so, else False when either says not;
    - the union of the citations' ``integrity_flags`` (a retraction one source reports is
      never lost) and the larger ``cited_by_count``.
    """
    old_c, new_c = existing.citation, new.citation
    old_ids, new_ids = strong_identifiers(old_c), strong_identifiers(new_c)
    ids = {**new_ids, **old_ids}

    prefer_new_venue = existing.is_preprint and not new.is_preprint
    if prefer_new_venue:
        journal = new_c.journal or old_c.journal
        year = new_c.year or old_c.year
        date = new_c.date or old_c.date
    else:
        journal = old_c.journal or new_c.journal
        year = old_c.year or new_c.year
        date = _more_precise_date(old_c.date, new_c.date)

    citation = old_c.model_copy(
        update={
            "title": old_c.title if old_c.title.strip() else new_c.title,
            "authors": list(
                new_c.authors if len(new_c.authors) > len(old_c.authors) else old_c.authors
            ),
            "journal": journal,
            "year": year,
            "date": date,
            "url": old_c.url or new_c.url,
            "pmid": ids.get("pmid") or old_c.pmid,
            "doi": ids.get("doi") or old_c.doi,
            "pmcid": ids.get("pmcid") or old_c.pmcid,
            "nct_id": ids.get("nct") or old_c.nct_id,
            "open_access": _open_access(old_c.open_access, new_c.open_access),
            "integrity_flags": union_flags(old_c.integrity_flags, new_c.integrity_flags),
            "cited_by_count": _max_count(old_c.cited_by_count, new_c.cited_by_count),
        }
    )
    old_text, new_text = existing.content.strip(), new.content.strip()
    return existing.model_copy(
        update={
            "content": new.content if len(new_text) > len(old_text) else existing.content,
            "citation": citation,
            "relevance": max(existing.relevance, new.relevance),
            "query": existing.query or new.query,
            "sources": _union(existing.sources, new.sources),
            "mesh_terms": _union(existing.mesh_terms, new.mesh_terms),
            "publication_types": _union(existing.publication_types, new.publication_types),
            "checklist_keys": _union(existing.checklist_keys, new.checklist_keys),
            "is_preprint": existing.is_preprint and new.is_preprint,
            "passages": list(existing.passages or new.passages),
        }
    )
