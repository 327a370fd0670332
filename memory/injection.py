"""The step-0 injection block (seed 004 section 2.5): three Markdown sections that never fail.

* learnings: at most 5, by cosine similarity, then reuse score (missing = 0.0), then newest;
* veille: at most 3 watch notes, KNN then impact_pv in {fort, modere}, each with its tags;
* clarifications: at most 3, exact (domain, project), newest first, no embedding call.

A section without hits says `_aucun résultat_`; the learnings section of an agent whose manifest
does not enable long-term memory says `_mémoire long terme désactivée_` (memory/reach.py: an agent
reads the learnings its manifest's memory reaches, operators all of them); a section whose source
fails (embedding backend down or too slow, a database error in its query) says `_source indisponible_` and logs
`[inject] section <name> failed: ...`; the other sections are still served and the block is
always returned. Every learning served is recorded as an injection, which feeds reuse scores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from governance.kernel.access import agent_or_perm
from governance.kernel.principals import Principal
from memory import clarifications, scoring, search
from memory.models import Learning, LearningInjection, VeilleNote
from memory.reach import reach_of

logger = logging.getLogger(__name__)

NO_RESULT = "_aucun résultat_"
UNAVAILABLE = "_source indisponible_"
DISABLED = "_mémoire long terme désactivée_"
LIMITS = {"learnings": 5, "veille": 3, "clarifications": 3}
TITLES = {"learnings": "Learnings", "veille": "Veille", "clarifications": "Clarifications"}
STRONG_IMPACTS = ("fort", "modere")


@dataclass
class Section:
    name: str
    status: str = "ok"  # ok | empty | unavailable | disabled
    items: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def inline(value: object) -> str:
    """Item text on one line: a learning or a summary with newlines would otherwise open its own
    ``##`` heading, and the block an agent parses would have more than its three sections."""
    return " ".join(str(value).split())


def render(sections: list[Section]) -> str:
    """Pure: the Markdown block from the sections, always all three in the same order."""
    parts = []
    for section in sections:
        body = {"empty": NO_RESULT, "unavailable": UNAVAILABLE, "disabled": DISABLED}.get(section.status)
        body = body or "\n".join(section.lines)
        parts.append(f"## {TITLES[section.name]}\n\n{body}")
    return "\n\n".join(parts) + "\n"


def _guarded(name: str, build: Callable[[], Section]) -> Section:
    try:
        with transaction.atomic():  # a failing query must not break the other sections
            section = build()
    except Exception as exc:  # any failure of a source degrades its section only (INV-295-15)
        logger.warning("[inject] section %s failed: %s", name, exc)
        return Section(name, status="unavailable")
    if not section.items and section.status == "ok":
        section.status = "empty"
    return section


def _learnings(
    vector_of: Callable[[], tuple], story: str, domain: str, project: str, actor: Principal, *, record: bool
) -> Section:
    reach = reach_of(actor)  # the manifest's memory section, read once per process
    if not reach.long_term:
        return Section("learnings", status="disabled")
    vector, model, dimension = vector_of()
    hits = search.nearest_learnings(vector, model=model, dimension=dimension, k=LIMITS["learnings"], reach=reach)
    learnings = Learning.objects.in_bulk([h.object_id for h in hits])
    section = Section("learnings")
    now = timezone.now()
    for hit in hits:
        item = learnings[hit.object_id]
        section.items.append(
            {
                "id": item.pk,
                "story": item.story,
                "gate": item.gate,
                "domain": item.domain,
                "scope": item.scope,
                "tags": item.tags,
                "text": item.text,
                "similarity": round(hit.similarity, 4),
                "reuse_score": float(hit.reuse_score),
            }
        )
        tags = " ".join(item.tags)
        section.lines.append(inline(f"- ({item.story}, gate {item.gate}, {item.domain}) {item.text} {tags}"))
    if not record:  # a preview (inject --dry-run): served to nobody, so reuse scores never see it
        return section
    if section.items:
        scoring.hold_inputs()
    served_to = actor.label
    LearningInjection.objects.bulk_create(
        LearningInjection(learning_id=i["id"], story=story, domain=domain, project=project, at=now, served_to=served_to)
        for i in section.items
    )
    return section


def _veille(vector_of: Callable[[], tuple]) -> Section:
    vector, model, dimension = vector_of()
    hits = search.nearest_veille(vector, model=model, dimension=dimension, k=LIMITS["veille"], impacts=STRONG_IMPACTS)
    found = VeilleNote.objects.in_bulk([h.object_id for h in hits])
    section = Section("veille")
    for hit in hits:
        note = found[hit.object_id]
        section.items.append(
            {
                "id": note.pk,
                "title": note.title,
                "date": note.date.isoformat(),
                "impact_pv": note.impact_pv,
                "verdict_veille": note.verdict_veille,
                "summary": note.summary,
                "tags": note.tags,
                "similarity": round(hit.similarity, 4),
            }
        )
        tags = f" (tags: {', '.join(note.tags)})" if note.tags else ""
        section.lines.append(inline(f"- **{note.title}** ({note.date}, impact {note.impact_pv}): {note.summary}{tags}"))
    return section


def _clarifications(domain: str, project: str) -> Section:
    section = Section("clarifications")
    for entry in clarifications.latest_clarifications(domain, project, limit=LIMITS["clarifications"]):
        section.items.append(
            {k: entry[k] for k in ("story", "version", "name", "answers")} | {"date": entry["date"].isoformat()}
        )
        answers = " / ".join(entry["answers"])
        section.lines.append(inline(f"- {entry['story']} (v{entry['version']}, {entry['date']:%Y-%m-%d}): {answers}"))
    return section


def build_block(
    *, actor: Principal, story: str, domain: str, project: str, query_text: str, backend=None, record: bool = True
) -> dict[str, Any]:
    """The block as Markdown and as data. Never raises for a failing source. The injections it
    records name who was served (they are what reuse scores count); ``record=False`` previews the
    block without recording any."""
    agent_or_perm(actor, "memory.add_learninginjection")
    cache: dict[str, Any] = {}

    def vector_of() -> tuple:
        """Embed the query once for the two sections that need it (and fail both if it fails)."""
        if "v" not in cache:
            from memory.embeddings import get_backend

            try:
                chosen = backend or get_backend()
                cache["v"] = (chosen.embed([query_text])[0], chosen.model, chosen.dimension)
            except Exception as exc:  # remembered: the second section must not wait for it again
                cache["v"] = exc
        if isinstance(cache["v"], Exception):
            raise cache["v"]
        return cache["v"]

    sections = [
        _guarded("learnings", lambda: _learnings(vector_of, story, domain, project, actor, record=record)),
        _guarded("veille", lambda: _veille(vector_of)),
        _guarded("clarifications", lambda: _clarifications(domain, project)),
    ]
    return {
        "markdown": render(sections),
        "sections": [{"name": s.name, "status": s.status, "items": s.items} for s in sections],
    }
