"""Argument completion for MCP's ``completion/complete``: the values a client may offer while its
user types a prompt's or a resource template's argument.

Every value comes from the caller's own reach, through ``visible_to``, the one access filter: an
agent completes its own session ids and the stories, domains and projects of its own sessions, and
never learns another agent's. A reference this server does not complete (another prompt, another
template, another argument) has nothing to suggest: no values, as the SDK's own high-level server
answers, rather than an error a client would show at every keystroke.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway import context
from governance.kernel.principals import Principal
from sessions.models import AISession

LIMIT = 100  # MCP: one answer holds at most 100 values
SESSION_ARGUMENT = "sessionId"
TEMPLATE_ARGUMENTS = ("domain", "project", "story")  # the variables of context.INJECTION_TEMPLATE


@dataclass(frozen=True)
class Suggestions:
    values: list[str]
    total: int

    @property
    def has_more(self) -> bool:
        return self.total > len(self.values)


NOTHING = Suggestions(values=[], total=0)


def _usable(text: str) -> bool:
    """A value PostgreSQL can compare: it refuses NUL characters, which no stored value holds, so
    such a value completes to nothing instead of failing in the database. (A lone surrogate never
    gets here: the SDK refuses it as a JSON parse error.)"""
    return "\x00" not in text


def for_prompt(principal: Principal, prompt: str, argument: str, value: str) -> Suggestions:
    """The caller's own session ids starting with ``value``, newest first, for a session prompt."""
    if prompt not in context.PROMPTS or argument != SESSION_ARGUMENT or not _usable(value):
        return NOTHING
    sessions = AISession.objects.visible_to(principal)
    if value:
        sessions = sessions.filter(session_id__startswith=value)
    total = sessions.count()
    ids = sessions.order_by("-created_at").values_list("session_id", flat=True)[:LIMIT]
    return Suggestions(values=[str(session_id) for session_id in ids], total=total)


def for_template(principal: Principal, uri: str, argument: str, value: str, given: dict[str, str]) -> Suggestions:
    """The stories, domains or projects of the caller's own sessions for the injection-block
    template, narrowed by the template's other arguments the client already has."""
    if uri != context.INJECTION_TEMPLATE or argument not in TEMPLATE_ARGUMENTS:
        return NOTHING
    known = {name: text for name, text in given.items() if name in TEMPLATE_ARGUMENTS and name != argument and text}
    if not all(_usable(text) for text in (value, *known.values())):
        return NOTHING
    sessions = AISession.objects.visible_to(principal).filter(**known).exclude(**{argument: ""})
    if value:
        sessions = sessions.filter(**{f"{argument}__startswith": value})
    found = sessions.order_by(argument).values_list(argument, flat=True).distinct()
    return Suggestions(values=list(found[:LIMIT]), total=found.count())
