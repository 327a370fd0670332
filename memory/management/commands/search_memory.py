"""Search agent memory from a shell (the seed's /veille-search and /clarifications-search):
`manage.py search_memory "QUERY" [--kind learning|veille|clarification] [-k N] [filters]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import Clarification, Learning, VeilleNote

KINDS = ("learning", "veille", "clarification")
IMPACTS = tuple(choice.value for choice in VeilleNote.Impact)
VERDICTS = tuple(choice.value for choice in VeilleNote.Verdict)
SNIPPET = 160


def ranked_hits(
    query: str,
    *,
    kind: str,
    k: int,
    domain: str | None = None,
    project: str | None = None,
    impact: str | None = None,
    verdict: str | None = None,
) -> list[dict[str, Any]]:
    """The same ranking as GET /api/v1/memory/search: cosine similarity as `score`, best first."""
    from memory.embeddings import get_backend

    backend = get_backend()
    vector = backend.embed([query])[0]
    common: dict[str, Any] = {"model": backend.model, "dimension": backend.dimension, "k": k}
    if kind == "learning":
        hits = Learning.objects.nearest(vector, domain=domain, project=project, **common)
        rows = Learning.objects.in_bulk([h.object_id for h in hits])
        return [
            {
                "id": h.object_id,
                "score": h.similarity,
                "title": f"{rows[h.object_id].story} gate {rows[h.object_id].gate}",
                "text": rows[h.object_id].text,
            }
            for h in hits
        ]
    if kind == "veille":
        hits = VeilleNote.objects.nearest(vector, impacts=(impact,) if impact else None, verdict=verdict, **common)
        notes = VeilleNote.objects.in_bulk([h.object_id for h in hits])
        return [
            {
                "id": h.object_id,
                "score": h.similarity,
                "title": notes[h.object_id].title,
                "text": notes[h.object_id].summary,
            }
            for h in hits
        ]
    hits = Clarification.objects.nearest(vector, domain=domain, project=project, **common)
    answers = Clarification.objects.in_bulk([h.object_id for h in hits])
    return [
        {
            "id": h.object_id,
            "score": h.similarity,
            "title": f"{answers[h.object_id].story} Q{answers[h.object_id].question_idx}",
            "text": answers[h.object_id].verbatim,
        }
        for h in hits
    ]


def hit_count(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 100:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = "Print the nearest learnings, watch notes or clarifications to QUERY, ranked, with their scores."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--kind", choices=KINDS, default="learning")
        parser.add_argument("-k", type=hit_count, default=5, help="how many hits, 1 to 100 (default 5)")
        parser.add_argument("--impact", choices=IMPACTS, help="veille only: keep this impact_pv")
        parser.add_argument("--verdict", choices=VERDICTS, help="veille only: keep this verdict_veille")
        parser.add_argument("--domain", help="learning or clarification only")
        parser.add_argument("--project", help="learning or clarification only")

    def handle(self, *args: object, query: str, kind: str, k: int, **options: Any) -> None:
        filters = {name: options[name] for name in ("impact", "verdict", "domain", "project") if options[name]}
        allowed = {"veille": {"impact", "verdict"}}.get(kind, {"domain", "project"})
        wrong = sorted(set(filters) - allowed)
        if wrong:
            raise CommandError(f"--{', --'.join(wrong)} do(es) not apply to --kind {kind}")
        if not query.strip():
            raise CommandError("the query is empty")
        try:
            hits = ranked_hits(query, kind=kind, k=k, **filters)
        except Exception as exc:  # backend down or misconfigured: say so, no traceback
            raise CommandError(f"[search] failed: {exc}") from exc
        if not hits:
            self.stdout.write("no results")
            return
        for rank, hit in enumerate(hits, start=1):
            text = " ".join(hit["text"].split())
            if len(text) > SNIPPET:
                text = text[: SNIPPET - 1] + "…"
            self.stdout.write(f"{rank:>2}. {hit['score']:.4f}  {kind}:{hit['id']}  {hit['title']}  {text}")
