"""What an agent reads rather than calls: MCP resources (its manifest, the step-0 injection block)
and prompts (the level 1 and level 2 texts of one of its sessions, seed 003 section 10).

Each reader takes the principal and goes through the same services and access checks as the REST
API; a refusal is a ``DomainError`` the server turns into an MCP error.
"""

from __future__ import annotations

import json
import re

from agents.registry import manifest_document
from governance.kernel.access import visible
from governance.kernel.exceptions import NotFound
from governance.kernel.principals import Principal
from memory import injection
from sessions import prompt
from sessions.models import AISession

MANIFEST_URI = "governance://manifest"
INJECTION_TEMPLATE = "governance://injection-block/{domain}/{project}/{story}"
_INJECTION = re.compile(r"^governance://injection-block/(?P<domain>[^/]+)/(?P<project>[^/]+)/(?P<story>[^/]+)$")
PROMPTS = {
    "session_level1": ("Level 1 of a session's prompt: the documentation of the commands it may use.", prompt.level1),
    "session_level2": ("Level 2 of a session's prompt: what is always sent (limits, state).", prompt.level2),
}


def read(principal: Principal, uri: str) -> tuple[str, str]:
    """(text, MIME type) of the resource at ``uri``."""
    if uri == MANIFEST_URI:
        agent = principal.agent
        if agent is None or agent.active_manifest_id is None:
            raise NotFound("This key's agent has no active manifest.")
        return json.dumps(manifest_document(agent.active_manifest_id), indent=2, ensure_ascii=False), "application/json"
    match = _INJECTION.match(uri)
    if match is None:
        raise NotFound(f"No resource {uri!r}.")
    story, domain, project = match.group("story", "domain", "project")
    block = injection.build_block(actor=principal, story=story, domain=domain, project=project, query_text=story)
    return block["markdown"], "text/markdown"


def session_prompt(principal: Principal, name: str, session_id: str) -> str:
    """The text of prompt ``name`` for a session the principal may see."""
    if name not in PROMPTS:
        raise NotFound(f"No prompt {name!r}.")
    session = visible(principal, AISession.objects.select_related("agent", "automation"), session_id, what="session")
    assert isinstance(session, AISession)
    return PROMPTS[name][1](session)
