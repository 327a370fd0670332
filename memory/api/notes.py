"""Memory router, watch notes and clarifications (mounted at /api/v1/memory): thin views over
memory.watch_notes and memory.clarifications, which hold every rule. Who may call what is decided
here, once per endpoint."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Router, Status

from governance.kernel import json_guard
from governance.kernel.access import agent_or_perm
from governance.kernel.auth import caller
from governance.kernel.exceptions import InvalidInput
from governance.kernel.problems import problem_response
from memory import clarifications, watch_notes
from memory.schemas import (
    ClarificationsCreatedOut,
    ClarificationsIn,
    ClarificationsListOut,
    VeilleNoteOut,
)
from memory.veille import NoteError

router = Router(tags=["memory"])

MARKDOWN_TYPES = ("text/markdown", "text/x-markdown", "text/plain")
VEILLE_BODY = {
    "requestBody": {
        "required": True,
        "description": (
            "A Markdown note with YAML front matter (`title`, `date`, `verdict_veille`, `impact_pv`, "
            "optional `tags`): the raw text as `text/markdown` (name in `?name=`), or JSON "
            '`{"name", "content"}`.'
        ),
        "content": {
            # The raw note; `binary` lets a generated client send it as is (a `File`).
            "text/markdown": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["content"],
                    "properties": {"name": {"type": "string"}, "content": {"type": "string"}},
                }
            },
        },
    }
}


def _invalid(loc: list[Any], msg: str, kind: str) -> InvalidInput:
    return InvalidInput(msg, errors=[{"loc": loc, "msg": msg, "type": kind}])


def _veille_source(request: HttpRequest, name: str | None) -> tuple[str, str | None]:
    """The note's text and name, from a raw Markdown body or a JSON ``{"name", "content"}``."""
    try:
        body = request.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(["body"], "the body is not UTF-8 text", "encoding") from exc
    if request.content_type in MARKDOWN_TYPES:
        if name is not None:
            try:
                name = watch_notes.check_note_name(name)
            except NoteError as exc:
                raise _invalid(["query", "name"], exc.reason, "veille_invalid") from exc
        return body, name
    try:
        data = json_guard.decode(body)
    except json_guard.BodyErrors as exc:
        raise InvalidInput("The request is invalid; see errors.", errors=exc.errors) from exc
    except json.JSONDecodeError as exc:
        raise _invalid(["body"], f"invalid JSON: {exc.msg} at line {exc.lineno}", "json_invalid") from exc
    if not isinstance(data, dict):
        raise _invalid(["body"], 'expected {"name", "content"} or a text/markdown body', "type")
    content, body_name = data.get("content"), data.get("name", name)
    if not isinstance(content, str):
        raise _invalid(["body", "content"], "the note's Markdown text is required", "missing")
    if body_name is not None and not isinstance(body_name, str):
        raise _invalid(["body", "name"], "must be a string", "string_type")
    return content, body_name


@router.post(
    "/veille", operation_id="post_veille", openapi_extra=VEILLE_BODY, response={200: VeilleNoteOut, 201: VeilleNoteOut}
)
def post_veille(request: HttpRequest, name: str | None = None) -> Status:
    """Add a watch note (agents; operators with `memory.add_veillenote`): 201 stored, 200 when a note
    of that name existed (replaced), 422 naming each missing or invalid field; nothing is written then."""
    actor = caller(request)
    agent_or_perm(actor, "memory.add_veillenote")
    text, note_name = _veille_source(request, name)
    note, created = watch_notes.add_note(text, note_name, actor=actor)
    return Status(201 if created else 200, note)


@router.post("/clarifications", operation_id="post_clarifications", response={201: ClarificationsCreatedOut})
def post_clarifications(request: HttpRequest, data: ClarificationsIn) -> Status | HttpResponse:
    """Store the PO's four answers for a story, byte for byte, as its next version (agents;
    operators with `memory.add_clarification`). 503 when the database refused the write."""
    actor = caller(request)
    agent_or_perm(actor, "memory.add_clarification")
    try:
        version, name = clarifications.persist_clarifications(**data.dict(), actor=actor)
    except clarifications.ClarificationWriteFailed as exc:
        return problem_response(503, detail=exc.detail)
    return Status(201, {"story": data.story, "version": version, "name": name})


@router.get("/clarifications", operation_id="list_clarifications", response=ClarificationsListOut)
def list_clarifications(
    request: HttpRequest,
    domain: str | None = None,
    project: str | None = None,
    limit: int = 3,
    offset: int = 0,
    all_versions: bool = False,
) -> dict:
    """Newest first (date, then version), exact `domain`/`project` filters; only each story's newest
    version unless `all_versions=true`. `count` is the number of matching versions."""
    agent_or_perm(caller(request), "memory.view_clarification")
    if not 1 <= limit <= 100:
        raise _invalid(["query", "limit"], "limit must be between 1 and 100", "range")
    if offset < 0:
        raise _invalid(["query", "offset"], "offset must be >= 0", "range")
    items = clarifications.latest_clarifications(domain, project, limit, offset=offset, all_versions=all_versions)
    count = clarifications.clarification_versions(domain, project, all_versions=all_versions).count()
    return {"items": items, "count": count}


@router.get(
    "/clarifications/{story}/markdown",
    operation_id="export_clarifications",
    response={200: None},
    openapi_extra={
        "responses": {
            200: {
                "description": "The version as the seed's Markdown file.",
                "content": {"text/markdown": {"schema": {"type": "string"}}},
            }
        }
    },
)
def export_clarifications(request: HttpRequest, story: str, version: int | None = None) -> HttpResponse:
    """One version (the newest by default) as the seed's Markdown file; 404 when there is none."""
    agent_or_perm(caller(request), "memory.view_clarification")
    text = clarifications.export_clarifications_markdown(story, version)
    return HttpResponse(text, content_type="text/markdown; charset=utf-8")
