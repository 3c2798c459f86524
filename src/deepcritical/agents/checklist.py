"""Assigning evidence to the checklist items it answers, by embedding similarity.

An evidence item answers a checklist item when both hold:

- the cosine similarity between the evidence embedding (title + content, from the store) and
  the embedding of the item's description reaches ``threshold``
  (``Settings.checklist_assign_threshold``, default 0.35 for all-MiniLM-L6-v2);
- the evidence is on the question at all: its similarity to the refined question reaches
  ``question_threshold`` (default: half of ``threshold``).

The description alone decides which item is answered; the question only gates relevance.
(Embedding "description + question" together would let any on-topic paper satisfy every item,
inflating coverage and stopping the search early.) An evidence item may answer several
checklist items, or none.

Only on-topic evidence counts: an item screening found off-topic
(``Evidence.screening == Screening.OFF_TOPIC``), or one a source marks as retracted
(``Citation.retracted``), is never assigned, and is taken out of any checklist item that
holds it before statuses are computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import ChecklistItem, ChecklistStatus, ResearchPlan, Screening

__all__ = [
    "assign_keys",
    "assign_to_checklist",
    "drop_off_topic",
    "refresh_statuses",
    "status_of",
]


def status_of(item: ChecklistItem) -> ChecklistStatus:
    """Satisfied at ``min_evidence`` items, partial with at least one, else unsatisfied."""
    n = len(item.evidence_ids)
    if n >= item.min_evidence:
        return ChecklistStatus.SATISFIED
    if n > 0:
        return ChecklistStatus.PARTIAL
    return ChecklistStatus.UNSATISFIED


def _off_topic(store: EvidenceStore, evidence_id: str) -> bool:
    """Whether the item is kept out of the checklist: screened off-topic, or retracted
    (``Citation.retracted``: a retracted record never counts as evidence)."""
    if evidence_id not in store:
        return False
    item = store.require(evidence_id)
    return item.screening == Screening.OFF_TOPIC or item.citation.retracted


def drop_off_topic(plan: ResearchPlan, store: EvidenceStore) -> None:
    """Take ids of off-topic evidence out of every checklist item (in place; ids not in
    ``store`` are kept)."""
    for item in plan.checklist:
        item.evidence_ids = [i for i in item.evidence_ids if not _off_topic(store, i)]


def refresh_statuses(plan: ResearchPlan, store: EvidenceStore | None = None) -> None:
    """Set every checklist item's status from its evidence count (in place); with ``store``,
    off-topic evidence is first taken out of the items (:func:`drop_off_topic`)."""
    if store is not None:
        drop_off_topic(plan, store)
    for item in plan.checklist:
        item.status = status_of(item)


def assign_to_checklist(
    plan: ResearchPlan,
    store: EvidenceStore,
    new_ids: Sequence[str],
    threshold: float,
    question_threshold: float | None = None,
) -> None:
    """Assign each new evidence item to the checklist items it answers (in place).

    For every checklist item and every id of ``new_ids`` that passes both tests of the module
    docstring (cosine similarities, -1..1): the id is appended to
    ``ChecklistItem.evidence_ids`` and the item's key to ``Evidence.checklist_keys`` (saved
    with :meth:`EvidenceStore.update`). Then every status is recomputed (:func:`status_of`).
    Ids already assigned are not repeated; ids not in the store and off-topic ids are ignored,
    and off-topic ids already held by an item are taken out of it. Synchronous (it
    embeds the descriptions and the question): call it in a worker thread from async code.

    Args:
        plan: the run's plan; its checklist items are updated.
        store: the run's evidence store.
        new_ids: evidence ids added this round.
        threshold: minimum similarity between evidence and item description.
        question_threshold: minimum similarity between evidence and the refined question
            (default ``threshold / 2``).
    """
    floor = threshold / 2 if question_threshold is None else question_threshold
    ids = [i for i in dict.fromkeys(new_ids) if i in store and not _off_topic(store, i)]
    if ids:
        on_topic = store.similarity(plan.refined_question, ids)
        ids = [i for i in ids if on_topic[i] >= floor]
    changed: dict[str, list[str]] = {}
    for item in plan.checklist:
        if not ids:
            break
        similarities = store.similarity(item.description, ids)
        for evidence_id in ids:
            if similarities[evidence_id] < threshold:
                continue
            if evidence_id not in item.evidence_ids:
                item.evidence_ids.append(evidence_id)
            keys = changed.setdefault(evidence_id, list(store.require(evidence_id).checklist_keys))
            if item.key not in keys:
                keys.append(item.key)
    for evidence_id, keys in changed.items():
        evidence = store.require(evidence_id)
        if keys != evidence.checklist_keys:
            store.update(evidence.model_copy(update={"checklist_keys": keys}))
    refresh_statuses(plan, store)


def assign_keys(
    plan: ResearchPlan, store: EvidenceStore, assignments: Mapping[str, Sequence[str]]
) -> None:
    """Assign evidence to the checklist items named for it (in place), as
    :func:`assign_to_checklist` does by similarity: for each evidence id -> checklist keys of
    ``assignments``, the id is appended to each named item's ``evidence_ids`` and the keys to
    ``Evidence.checklist_keys`` (saved with :meth:`EvidenceStore.update`); then every status
    is recomputed. Keys that are not checklist items, ids not in the store and off-topic or
    retracted ids are ignored; nothing is repeated. Used when the search agent's model named
    the questions a record answers (:mod:`deepcritical.agents.screener`)."""
    items = {c.key: c for c in plan.checklist}
    for evidence_id, named in assignments.items():
        if evidence_id not in store or _off_topic(store, evidence_id):
            continue
        evidence = store.require(evidence_id)
        keys = list(evidence.checklist_keys)
        for key in named:
            item = items.get(key)
            if item is None:
                continue
            if evidence_id not in item.evidence_ids:
                item.evidence_ids.append(evidence_id)
            if key not in keys:
                keys.append(key)
        if keys != evidence.checklist_keys:
            store.update(evidence.model_copy(update={"checklist_keys": keys}))
    refresh_statuses(plan, store)
