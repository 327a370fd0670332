"""What jobs ask of memory: seed 001's ``ragContext`` (what a job was told at its start, built
from the step-0 block), and the gate results their results report.

RAG FOURNIT: when a job is first leased, the platform builds the injection block (seed 004 step
0) for the job and keeps it with the job as its GraphState's ``ragContext``, so the audit shows
exactly what the agent was given. Seed 001 leaves the document, citation and truth-level schemas
to a RAG document we do not have; the shapes here are ours:

* ``documents``: every item of the block, ``{"id", "kind", "content", "score", "metadata"}``;
* ``citations``: ``{"documentId", "section", "source"}``, one per document, in block order;
* ``truthLevel``: the strongest level present. L1 a person's verbatim answer (clarification),
  L2 a learning promoted past its story (domain or global scope), L3 a story learning or a
  watch note, L4 nothing found (or every source unavailable);
* ``confidence``: the mean cosine similarity of the vector hits (0 when there are none);
* ``searchMethod``: ``hybrid`` (vector sections plus the exact clarification lookup), as the
  seed's default; ``indexVersion``: the job's ``context.ragVersion``, else the embedding model.

The block is built for the job's story (``payload.story``, else the job id), domain
(``payload.domain``, else the agent's) and project (``payload.project``, else the scope's
entity type), with the intent and payload as the query text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

from governance.kernel.exceptions import InvalidInput
from memory import injection, learnings

if TYPE_CHECKING:
    from agents.models import Job
    from governance.kernel.principals import Principal
    from memory.models import GateResult

QUERY_CHARS = 2000
_LEVELS = ("L1", "L2", "L3", "L4")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class Where(TypedDict):
    story: str
    domain: str
    project: str
    query_text: str


def where(job: Job) -> Where:
    """The story, domain and project a job's block is built for, and its query text (the intent,
    the context's seoRole, the payload)."""
    payload = job.payload if isinstance(job.payload, dict) else {}
    story = _text(payload.get("story")) or str(job.pk)
    domain = (_text(payload.get("domain")) or job.agent.domain or "core").lower()
    project = _text(payload.get("project")) or str(job.scope.get("entityType", ""))
    context = job.context if isinstance(job.context, dict) else {}
    # The page's SEO role (seed 001 context.seoRole) says what the work is about as much as the
    # intent: a "pillar" audit and a "product" audit want different lessons.
    role = _text(context.get("seoRole"))
    query = " ".join(filter(None, [job.intent, role, json.dumps(payload, ensure_ascii=False, sort_keys=True)]))
    query = query[:QUERY_CHARS]
    return {"story": story[:100], "domain": domain[:100], "project": project[:100], "query_text": query}


def _document(section: str, item: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A block item as a document, with its truth level."""
    if section == "learnings":
        level = "L3" if item.get("scope", "story") == "story" else "L2"
        doc = {
            "id": f"learning:{item['id']}",
            "kind": "learning",
            "content": item["text"],
            "score": item["similarity"],
            "metadata": {k: item[k] for k in ("story", "gate", "domain", "tags", "reuse_score") if k in item},
        }
        return doc, level
    if section == "veille":
        doc = {
            "id": f"veille:{item['id']}",
            "kind": "watch_note",
            "content": f"{item['title']}: {item['summary']}",
            "score": item["similarity"],
            "metadata": {k: item[k] for k in ("date", "impact_pv", "verdict_veille", "tags") if k in item},
        }
        return doc, "L3"
    doc = {
        "id": f"clarification:{item['story']}:v{item['version']}",
        "kind": "clarification",
        "content": " / ".join(item["answers"]),
        "score": 1.0,
        "metadata": {k: item[k] for k in ("story", "version", "name", "date")},
    }
    return doc, "L1"


def rag_context(block: dict[str, Any], *, index_version: str) -> dict[str, Any]:
    """Pure: seed 001's ragContext from a built block (``injection.build_block``'s answer)."""
    documents, citations, levels, scores = [], [], set(), []
    for section in block["sections"]:
        for item in section["items"]:
            doc, level = _document(section["name"], item)
            documents.append(doc)
            citations.append({"documentId": doc["id"], "section": section["name"], "source": "memory"})
            levels.add(level)
            if section["name"] != "clarifications":
                scores.append(float(doc["score"]))
    confidence = max(0.0, min(1.0, sum(scores) / len(scores))) if scores else 0.0
    return {
        "documents": documents,
        "citations": citations,
        "truthLevel": min(levels) if levels else _LEVELS[-1],
        "confidence": round(confidence, 4),
        "searchMethod": "hybrid",
        "indexVersion": index_version,
        "injectionBlock": block["markdown"],
        "sections": {section["name"]: section["status"] for section in block["sections"]},
    }


def context_for_job(job: Job, *, actor: Principal) -> dict[str, Any]:
    """Build the job's block (recording its injections, served to ``actor``) and its ragContext.
    Never raises for a failing source: the block degrades section by section."""
    from memory.embeddings import get_backend

    context = job.context if isinstance(job.context, dict) else {}
    index_version = _text(context.get("ragVersion"))
    if not index_version:
        try:
            index_version = get_backend().model
        except Exception:  # the backend's configuration is broken: the block says so too
            index_version = "unknown"
    block = injection.build_block(actor=actor, **where(job))
    return rag_context(block, index_version=index_version)


def gate_errors(data: Any) -> list[dict[str, Any]]:
    """Pure: what is wrong with a result's ``gate``/``verdict`` pair (empty when it is fine or
    absent). Both or neither: a gate without a verdict says nothing a score could learn from."""
    if not isinstance(data, dict) or ("gate" not in data and "verdict" not in data):
        return []
    errors = []
    gate, verdict = data.get("gate"), data.get("verdict")
    if isinstance(gate, bool) or not isinstance(gate, int) or not 0 <= gate <= 99:
        errors.append({"loc": ["body", "data", "gate"], "msg": "a gate number from 0 to 99", "type": "gate"})
    if verdict not in ("GO", "NO_GO"):
        errors.append({"loc": ["body", "data", "verdict"], "msg": 'the verdict "GO" or "NO_GO"', "type": "verdict"})
    return errors


def record_gate(job: Job, data: Any, *, actor: Principal) -> GateResult | None:
    """A job result naming ``gate`` and ``verdict`` records the gate result for the job's story
    (as ``POST /memory/gate-results`` would), so reuse scores learn from jobs without a second
    call. A malformed pair refuses the whole result (422), nothing written."""
    errors = gate_errors(data)
    if errors:
        raise InvalidInput("The result's gate and verdict cannot be recorded; see errors.", errors=errors)
    if not isinstance(data, dict) or "gate" not in data:
        return None
    return learnings.record_gate_result(
        actor=actor, story=where(job)["story"], gate=data["gate"], verdict=data["verdict"]
    )


def scrub_jobs(document_id: str, texts: list[str], replacement: str) -> int:
    """Replace what jobs were told of a memory row an operator erased or redacted: the document's
    content and its line in the kept block (memory/privacy.py). A job's ragContext is its audit of
    what the agent saw, so the rest of it stays; only the person's words go. Returns the number of
    jobs changed."""
    from agents.models import Job

    forms = sorted({form for text in texts if text.strip() for form in (text, injection.inline(text))}, key=len)
    changed = 0
    told = Job.objects.select_for_update().filter(rag_context__documents__contains=[{"id": document_id}])
    for job in told:
        context = job.rag_context
        for document in context.get("documents", []):
            if document.get("id") == document_id:
                document["content"] = _replace_all(str(document.get("content", "")), forms, replacement)
        context["injectionBlock"] = _replace_all(str(context.get("injectionBlock", "")), forms, replacement)
        job.rag_context = context
        job.save(update_fields=["rag_context"])
        changed += 1
    return changed


def _replace_all(text: str, forms: list[str], replacement: str) -> str:
    for form in reversed(forms):  # the longest first, so a shorter form never splits a longer one
        text = text.replace(form, replacement)
    return text
