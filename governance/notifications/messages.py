"""What a notification says and how it is signed: pure functions, no Django.

A notification carries a short title, a link to the control plane and a few short facts, never
an LLM output or a secret: whoever reads the channel follows the link and signs in to see more.
Titles and facts are cut here, whatever the caller passed, because some come from agents (an
approval request's title, a session's name).

Three shapes: Slack-compatible JSON (``text`` for notifications and old clients, ``blocks`` for
the message), a generic JSON document signed as Standard Webhooks says, like our inbound webhooks
(governance/kernel/webhooks.py), and a plain-text email.

A webhook target passes the outbound guard (sessions/providers/outbound.py, a pure module every
request the server makes on an operator's behalf goes through): https to public addresses, or
plain http and private addresses for a rule the operator marked internal; a cloud metadata
address never.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass

import sessions.providers.outbound as outbound

TITLE_CHARS = 120
FACT_CHARS = 120
MAX_FACTS = 8

EVENT_HEADER = "X-Governance-Event"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_EMAIL = re.compile(r"^[^@\s,;<>\"]+@[^@\s,;<>\"]+\.[^@\s,;<>\"]+$")


@dataclass(frozen=True)
class Notice:
    """One event as every channel tells it."""

    event: str
    event_label: str
    title: str
    link: str
    facts: dict[str, str]
    at: str  # ISO 8601


def short(text: object, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def notice(*, event: str, event_label: str, title: str, link: str, facts: dict[str, object], at: str) -> Notice:
    """The notice with its title and facts cut to size, at most MAX_FACTS of them."""
    kept = {short(name, 40): short(value, FACT_CHARS) for name, value in list(facts.items())[:MAX_FACTS]}
    return Notice(event=event, event_label=event_label, title=short(title, TITLE_CHARS), link=link, facts=kept, at=at)


def _mrkdwn(text: str) -> str:
    """Slack's three escapes: a title can't become a link, a mention or markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack(n: Notice) -> dict[str, object]:
    """An incoming-webhook message: ``text`` is the fallback, ``blocks`` the message."""
    title = _mrkdwn(n.title)
    blocks: list[dict[str, object]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{_mrkdwn(n.event_label)}*\n<{n.link}|{title}>"}}
    ]
    if n.facts:
        fields = [{"type": "mrkdwn", "text": f"*{_mrkdwn(k)}*\n{_mrkdwn(v)}"} for k, v in n.facts.items()]
        blocks.append({"type": "section", "fields": fields[:10]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"{n.event} · {n.at}"}]})
    return {"text": f"{n.event_label}: {title} <{n.link}>", "blocks": blocks}


def generic(n: Notice) -> dict[str, object]:
    """The signed JSON document."""
    return {"event": n.event, "title": n.title, "link": n.link, "facts": n.facts, "at": n.at}


def email(n: Notice) -> dict[str, object]:
    """Subject and plain-text body."""
    facts = "".join(f"{name}: {value}\n" for name, value in n.facts.items())
    return {"subject": short(f"[{n.event_label}] {n.title}", 150), "body": f"{n.title}\n\n{facts}\nOpen: {n.link}\n"}


def body(payload: dict[str, object]) -> bytes:
    """The exact bytes sent (and signed) for a stored payload."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def message_id(delivery_id: int) -> str:
    """A delivery's ``webhook-id``: the same on every attempt, so a receiver sees a retry as one."""
    return f"delivery_{delivery_id}"


def url_problem(url: str, *, internal: bool) -> str | None:
    """Why a webhook target is refused, or None: the outbound guard's rules, the host name resolved
    (an operator learns at once that an address is refused; sending checks it again)."""
    try:
        outbound.check(url, internal=internal)
    except outbound.OutboundRefused as exc:
        return f"Refused: {exc}."
    except (OSError, UnicodeError) as exc:  # socket.gaierror: no such name, resolver down
        return f"The host name does not resolve ({exc})."
    return None


def masked(target: str) -> str:
    """A webhook target as viewers see it: scheme and host. A Slack webhook URL is itself the
    credential (its path is the token), so only those who may change the rule see it whole."""
    if "://" not in target:
        return target
    parts = urllib.parse.urlsplit(target)
    return f"{parts.scheme}://{parts.hostname}/…"


def addresses(target: str) -> list[str]:
    """The email addresses of a target written as a comma- or space-separated list."""
    return [part for part in re.split(r"[\s,;]+", target.strip()) if part]


def email_problem(target: str) -> str | None:
    """Why an email target is refused, or None."""
    found = addresses(target)
    if not found:
        return "Give at least one email address."
    wrong = [a for a in found if not _EMAIL.match(a)]
    return f"Not an email address: {', '.join(wrong[:3])}." if wrong else None


def backoff_seconds(attempts: int, base: int, cap: int = 3600) -> int:
    """Wait before attempt ``attempts + 1``: ``base``, then doubled each time, at most ``cap``."""
    return min(cap, base * 2 ** max(0, attempts - 1))


def retryable(status: int) -> bool:
    """A 4xx says the request itself is wrong (retrying sends the same one) except 429, a slow-down."""
    return status == 429 or status >= 500
