"""Whom an OAuth client acts as, written into its token's scope. No Django.

A client asks only for ``mcp``; the operator's consent adds exactly one subject: ``agent:<id>`` (the
client is that agent, with its active manifest) or ``operator`` (the client is the consenting
person, with their role). The scope travels with the grant, every access token and every refresh
token, so the choice cannot be lost or widened on refresh (RFC 6749 §6 narrows, never widens).
"""

from __future__ import annotations

from dataclasses import dataclass

MCP_SCOPE = "mcp"
OPERATOR = "operator"
AGENT_PREFIX = "agent:"
# What a client may ask for; the subject scopes come only from the consent page.
REQUESTABLE = frozenset({MCP_SCOPE})


@dataclass(frozen=True)
class Subject:
    """An agent (``agent_id``) or the token's own user (``agent_id`` empty)."""

    agent_id: str = ""

    @property
    def scope(self) -> str:
        return f"{AGENT_PREFIX}{self.agent_id}" if self.agent_id else OPERATOR


def is_subject_scope(scope: str) -> bool:
    return scope == OPERATOR or (scope.startswith(AGENT_PREFIX) and len(scope) > len(AGENT_PREFIX))


def granted_scope(subject: Subject) -> str:
    """The scope string a consented grant carries."""
    return f"{MCP_SCOPE} {subject.scope}"


def subject_of(scopes: list[str] | set[str]) -> Subject | None:
    """The one subject a token's scopes name, with ``mcp``; None for none, or for two (a token
    the consent page never issues)."""
    if MCP_SCOPE not in scopes:
        return None
    named = [scope for scope in scopes if is_subject_scope(scope)]
    if len(named) != 1:
        return None
    scope = named[0]
    return Subject() if scope == OPERATOR else Subject(scope[len(AGENT_PREFIX) :])
