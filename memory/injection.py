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

The query text never fails the block either (issue 34): whatever an agent sends, the block has its
three sections and only the seed's two placeholders (``_aucun résultat_``, and the disabled-memory
one). A longer text is cut to QUERY_CHARS characters before it is embedded, and a text with nothing
to embed (empty, blank, invisible characters only) searches by story and domain alone: no embedding
call, the learnings of the block's domain within the agent's reach, the story's own first, then the
seed's order without the similarity (reuse score, newest); the watch notes the newest of the strong
impacts (memory/search.py ``story_learnings_sql``, ``latest_veille_sql``).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from governance.kernel.access import agent_or_perm
from governance.kernel.principals import Principal
from memory import block_query, clarifications, scoring, search
from memory.models import Learning, LearningInjection, VeilleNote
from memory.reach import Reach, reach_of

logger = logging.getLogger(__name__)

NO_RESULT = "_aucun résultat_"
UNAVAILABLE = "_source indisponible_"
DISABLED = "_mémoire long terme désactivée_"
LIMITS = {"learnings": 5, "veille": 3, "clarifications": 3}
TITLES = {"learnings": "Learnings", "veille": "Veille", "clarifications": "Clarifications"}
STRONG_IMPACTS = ("fort", "modere")
# What an embedder reads of a query: the local MiniLM truncates at 256 word pieces, and a word piece
# is rarely more than a few characters; 10,000 characters (the bound the API had) covers that many
# times over, and Ollama's nomic-embed-text and OpenAI's models (8,192 tokens) too. Cutting here
# keeps a megabyte of text from being tokenised whole for the 256 pieces the model keeps.
QUERY_CHARS = 10_000
# Characters that make no text to search: blanks, controls, format characters (zero-width
# spaces and joiners, BOM, soft hyphen, bidi marks) and unassigned or surrogate code points.
_INVISIBLE = frozenset(("Zs", "Zl", "Zp", "Cc", "Cf", "Cn", "Cs", "Co"))


def searchable_query(query_text: str) -> str | None:
    """Pure: the text to embed, cut to QUERY_CHARS, or None when nothing in it is visible (then the
    block searches by story and domain alone). Lone surrogates (valid in JSON, not in UTF-8) are
    dropped: an embedder would fail on them, and the block must not."""
    text = "".join(ch for ch in query_text[: QUERY_CHARS * 2] if not 0xD800 <= ord(ch) <= 0xDFFF)[:QUERY_CHARS]
    if all(unicodedata.category(ch) in _INVISIBLE for ch in text):
        return None
    return text


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


def learning_line(item: dict[str, Any]) -> str:
    return f"- ({item['story']}, gate {item['gate']}, {item['domain']}) {item['text']} {' '.join(item['tags'])}"


def veille_line(item: dict[str, Any]) -> str:
    tags = f" (tags: {', '.join(item['tags'])})" if item["tags"] else ""
    return f"- **{item['title']}** ({item['date']}, impact {item['impact_pv']}): {item['summary']}{tags}"


def clarification_line(item: dict[str, Any]) -> str:
    return f"- {item['story']} (v{item['version']}, {item['date'][:10]}): {' / '.join(item['answers'])}"


LINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "learnings": learning_line,
    "veille": veille_line,
    "clarifications": clarification_line,
}


def section_of(name: str, items: list[dict[str, Any]]) -> Section:
    """A section holding ``items`` (the block's data) and their Markdown lines; empty says so."""
    lines = [inline(LINES[name](item)) for item in items]
    return Section(name, status="ok" if items else "empty", items=items, lines=lines)


def _failed(name: str, exc: BaseException | None) -> Section:
    logger.warning("[inject] section %s failed: %s", name, exc)
    return Section(name, status="unavailable")


def _guarded(name: str, build: Callable[[], Section]) -> Section:
    try:
        with transaction.atomic():  # a failing query must not break the other sections
            return build()
    except Exception as exc:  # any failure of a source degrades its section only (INV-295-15)
        return _failed(name, exc)


Embedded = tuple[list[float], str, int] | Exception | None  # None: no query to embed


def _learnings(embedded: Embedded, reach: Reach, where: tuple[str, str], ledger: block_query.Ledger | None) -> Section:
    if not reach.long_term:
        return Section("learnings", status="disabled")
    if isinstance(embedded, Exception):
        raise embedded
    if embedded is None:
        story, domain = where
        hits = search.story_learnings(story=story, domain=domain, k=LIMITS["learnings"], reach=reach)
    else:
        vector, model, dimension = embedded
        hits = Learning.objects.nearest(vector, model=model, dimension=dimension, k=LIMITS["learnings"], reach=reach)
    learnings = Learning.objects.in_bulk([h.object_id for h in hits])
    items = [
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
        for hit in hits
        for item in [learnings[hit.object_id]]
    ]
    if ledger is not None and items:  # None: a preview (inject --dry-run), served to nobody
        scoring.hold_inputs()
        LearningInjection.objects.bulk_create(
            LearningInjection(
                learning_id=i["id"],
                story=ledger.story,
                domain=ledger.domain,
                project=ledger.project,
                at=ledger.at,
                served_to=ledger.served_to,
                similarity=i["similarity"],
            )
            for i in items
        )
    return section_of("learnings", items)


def _veille(embedded: Embedded) -> Section:
    if isinstance(embedded, Exception):
        raise embedded
    if embedded is None:
        hits = search.latest_veille(k=LIMITS["veille"], impacts=STRONG_IMPACTS)
    else:
        vector, model, dimension = embedded
        hits = VeilleNote.objects.nearest(
            vector, model=model, dimension=dimension, k=LIMITS["veille"], impacts=STRONG_IMPACTS
        )
    found = VeilleNote.objects.in_bulk([h.object_id for h in hits])
    items = [
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
        for hit in hits
        for note in [found[hit.object_id]]
    ]
    return section_of("veille", items)


def _clarifications(domain: str, project: str) -> Section:
    items = [
        {k: entry[k] for k in ("story", "version", "name", "answers")} | {"date": entry["date"].isoformat()}
        for entry in clarifications.latest_clarifications(domain, project, limit=LIMITS["clarifications"])
    ]
    return section_of("clarifications", items)


def _embedding(backend: Any, query_text: str) -> Embedded:
    """The query's vector, model and dimension, or why the backend could not give it; None when
    there is nothing to embed (no embedding call then)."""
    from memory.embeddings import get_backend

    searchable = searchable_query(query_text)
    if searchable is None:
        return None
    try:
        chosen = backend or get_backend()
        return chosen.embed([searchable])[0], chosen.model, chosen.dimension
    except Exception as exc:  # both sections that need it say so; the block is still served
        return exc


def _one_statement(
    embedded: Embedded,
    reach: Reach,
    story: str,
    domain: str,
    project: str,
    ledger: block_query.Ledger | None,
) -> list[Section]:
    """The three sections from memory/block_query.py's single round trip."""
    failure = embedded if isinstance(embedded, Exception) else None
    rows = block_query.fetch(
        vector=embedded if isinstance(embedded, tuple) else None,
        without_query=embedded is None,
        story=story,
        reach=reach if reach.long_term else None,
        domain=domain,
        project=project,
        limits=LIMITS,
        impacts=STRONG_IMPACTS,
        ledger=ledger,
    )
    if rows.learnings is not None:
        learnings = section_of("learnings", rows.learnings)
    elif not reach.long_term:
        learnings = Section("learnings", status="disabled")
    else:
        learnings = _failed("learnings", failure)
    veille = section_of("veille", rows.veille) if rows.veille is not None else _failed("veille", failure)
    return [learnings, veille, section_of("clarifications", rows.clarifications)]


def _section_by_section(
    embedded: Embedded,
    reach: Reach,
    story: str,
    domain: str,
    project: str,
    ledger: block_query.Ledger | None,
) -> list[Section]:
    """Each section in its own transaction: when the single statement failed, what failed is found
    here, and only its own section says so."""
    return [
        _guarded("learnings", lambda: _learnings(embedded, reach, (story, domain), ledger)),
        _guarded("veille", lambda: _veille(embedded)),
        _guarded("clarifications", lambda: _clarifications(domain, project)),
    ]


def build_block(
    *, actor: Principal, story: str, domain: str, project: str, query_text: str, backend=None, record: bool = True
) -> dict[str, Any]:
    """The block as Markdown and as data. Never raises for a failing source, nor for any
    ``query_text`` (``searchable_query``). The injections it
    records name who was served (they are what reuse scores count); ``record=False`` previews the
    block without recording any."""
    agent_or_perm(actor, "memory.add_learninginjection")
    reach = reach_of(actor)  # the manifest's memory section, read once per process
    embedded = _embedding(backend, query_text)
    ledger = (
        block_query.Ledger(story=story, domain=domain, project=project, served_to=actor.label, at=timezone.now())
        if record
        else None
    )
    try:
        sections = _one_statement(embedded, reach, story, domain, project, ledger)
    except Exception as exc:  # a source failed inside the one statement: find which, section by section
        logger.info("[inject] single statement failed, reading section by section: %s", exc)
        sections = _section_by_section(embedded, reach, story, domain, project, ledger)
    return {
        "markdown": render(sections),
        "sections": [{"name": s.name, "status": s.status, "items": s.items} for s in sections],
    }
