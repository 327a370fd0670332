"""What a notification says and how it is signed: pure functions, no Django.

A notification carries a short title, a link to the control plane, a few short facts and one line
of what is to be decided (an inbox kind's summary: the tool and its arguments, the actions, the
question), never an LLM output, a payload or a secret: whoever reads the channel follows the link
and signs in to see more. Titles, facts and summaries are cut here, whatever the caller passed,
because some come from agents (an approval request's title, a tool call's arguments); what looks
like a credential in a title or a summary is masked before it is cut (``without_secrets``).

A digest tells what happened to one rule in its window at once: how many of each kind, from how
many agents, the first few items with their links, and a link to the inbox.

Three shapes: Slack-compatible JSON (``text`` for notifications and old clients, ``blocks`` for
the message), a generic JSON document signed as Standard Webhooks says, like our inbound webhooks
(governance/kernel/webhooks.py), and a plain-text email.

A webhook target passes the outbound guard (sessions/providers/outbound.py, a pure module every
request the server makes on an operator's behalf goes through): https to public addresses, or
plain http and private addresses for a rule the operator marked internal; a cloud metadata
address never.
"""

from __future__ import annotations

import ipaddress
import json
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

import sessions.providers.outbound as outbound

TITLE_CHARS = 120
FACT_CHARS = 120
SUMMARY_CHARS = 160
MAX_FACTS = 8
DIGEST_ITEMS = 5  # the items a digest names; it counts them all
_SCANNED_CHARS = 4000  # of a summary, masked before it is cut (arguments may be megabytes)

EVENT_HEADER = "X-Governance-Event"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_EMAIL = re.compile(r"^[^@\s,;<>\"]+@[^@\s,;<>\"]+\.[^@\s,;<>\"]+$")
# What a credential looks like in a line of arguments: the value of a key that names one (JSON or
# key=value), a password in a URL, and a random-looking token as gateway/leaks.py finds them in tool
# results (24 or more base64 or URL-safe characters, upper case, lower case and a digit, above
# detect-secrets' entropy limit): that module reads the plane's own secrets from the database and
# sits above this layer, so its token rule is applied here with the same library and limits.
_SECRET_NAME = r"[\w-]*(?:passw(?:or)?d|secret|token|api[_-]?key|authorization|credential|private[_-]?key|cookie)[\w-]*"
_NAMED_SECRET = re.compile(
    rf"""(?i)(["']?{_SECRET_NAME}["']?\s*[:=]\s*)(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s,;}})\]]+))"""
)
_URL_PASSWORD = re.compile(r"(://)[^/\s:@]+:[^/\s@]+@")
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_ENTROPY = Base64HighEntropyString()  # its default limit: 4.5 bits per character
MASK = "[redacted]"


@dataclass(frozen=True)
class Notice:
    """One event as every channel tells it."""

    event: str
    event_label: str
    title: str
    link: str
    facts: dict[str, str]
    at: str  # ISO 8601
    summary: str = ""  # what is to be decided, one line
    agent: str = ""  # whose event it is, named beside it in a digest


@dataclass(frozen=True)
class Telling:
    """How a kind of event is told beside others: its words in a digest's counts (``one``,
    ``many``), and whether it goes out at once even on a digest rule (``urgent``)."""

    one: str
    many: str
    urgent: bool = False

    def noun(self, n: int) -> str:
        return self.one if n == 1 else self.many


def short(text: object, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def without_secrets(text: str) -> str:
    """``text`` with what looks like a credential replaced by ``[redacted]``: a reviewer opens
    the item to read it whole, a channel's readers never see it."""
    text = _NAMED_SECRET.sub(_masked_value, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)
    return _TOKEN.sub(lambda m: MASK if _random_looking(m.group()) else m.group(), text)


def _masked_value(match: re.Match[str]) -> str:
    """The key as written, its value masked inside the quotes it had."""
    quote = '"' if match.group(2) is not None else "'" if match.group(3) is not None else ""
    return f"{match.group(1)}{quote}{MASK}{quote}"


def _random_looking(token: str) -> bool:
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
        and _ENTROPY.calculate_shannon_entropy(token) > _ENTROPY.entropy_limit
    )


def notice(
    *,
    event: str,
    event_label: str,
    title: str,
    link: str,
    facts: dict[str, object],
    at: str,
    summary: str = "",
    agent: str = "",
) -> Notice:
    """The notice with its title, facts and summary cut to size, at most MAX_FACTS facts; the
    title and the summary (agents write them) masked first."""
    kept = {short(name, 40): short(value, FACT_CHARS) for name, value in list(facts.items())[:MAX_FACTS]}
    return Notice(
        event=event,
        event_label=event_label,
        title=short(without_secrets(str(title)[:_SCANNED_CHARS]), TITLE_CHARS),
        link=link,
        facts=kept,
        at=at,
        summary=short(without_secrets(str(summary)[:_SCANNED_CHARS]), SUMMARY_CHARS),
        agent=agent,
    )


@dataclass(frozen=True)
class Digest:
    """What one rule's window held, as every channel tells it."""

    title: str  # "12 new approvals from 3 agents"
    link: str  # the inbox, filtered to the rule's scope
    counts: dict[str, int]  # per event kind
    words: tuple[str, ...]  # the counts in words: "10 approvals"
    items: tuple[Notice, ...]  # the first DIGEST_ITEMS
    total: int
    agents: int
    since: str  # ISO 8601: the first event
    until: str  # and the last


def digest(
    *,
    counts: Sequence[tuple[str, int, Telling]],
    agents: int,
    items: Sequence[Notice],
    link: str,
    since: str,
    until: str,
) -> Digest:
    """The digest of ``counts`` (event, how many, its telling), in the order given."""
    total = sum(n for _, n, _ in counts)
    what = counts[0][2].noun(total) if len(counts) == 1 else "events"
    who = f" from {agents} agent{'s' if agents != 1 else ''}" if agents else ""
    return Digest(
        title=f"{total} new {what}{who}",
        link=link,
        counts={event: n for event, n, _ in counts},
        words=tuple(f"{n} {telling.noun(n)}" for _, n, telling in counts),
        items=tuple(items[:DIGEST_ITEMS]),
        total=total,
        agents=agents,
        since=since,
        until=until,
    )


def _mrkdwn(text: str) -> str:
    """Slack's three escapes: a title can't become a link, a mention or markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _item_line(n: Notice, *, agent: bool = False) -> str:
    """An event in mrkdwn: its title linked (and its agent, in a digest), then what is to be decided."""
    who = f" ({_mrkdwn(n.agent)})" if agent and n.agent else ""
    return f"<{n.link}|{_mrkdwn(n.title)}>{who}" + (f"\n{_mrkdwn(n.summary)}" if n.summary else "")


def slack(n: Notice) -> dict[str, object]:
    """An incoming-webhook message: ``text`` is the fallback, ``blocks`` the message."""
    title = _mrkdwn(n.title)
    blocks: list[dict[str, object]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{_mrkdwn(n.event_label)}*\n{_item_line(n)}"}}
    ]
    if n.facts:
        fields = [{"type": "mrkdwn", "text": f"*{_mrkdwn(k)}*\n{_mrkdwn(v)}"} for k, v in n.facts.items()]
        blocks.append({"type": "section", "fields": fields[:10]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"{n.event} · {n.at}"}]})
    return {"text": f"{n.event_label}: {title} <{n.link}>", "blocks": blocks}


def slack_digest(d: Digest) -> dict[str, object]:
    """A digest as an incoming-webhook message: the counts, the first items (with their agent),
    the rest counted."""
    title = _mrkdwn(d.title)
    lines = [f"• {_item_line(n, agent=True)}" for n in d.items]
    if d.total > len(d.items):
        lines.append(f"… and {d.total - len(d.items)} more")
    blocks: list[dict[str, object]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*<{d.link}|{title}>*\n{', '.join(d.words)}"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"digest · {d.since} to {d.until}"}]},
    ]
    return {"text": f"{title} <{d.link}>", "blocks": blocks}


def generic(n: Notice) -> dict[str, object]:
    """The signed JSON document."""
    return {"event": n.event, "title": n.title, "link": n.link, "facts": n.facts, "summary": n.summary, "at": n.at}


def generic_digest(d: Digest) -> dict[str, object]:
    """A digest as the signed JSON document: ``items`` as single events read, ``counts`` by kind."""
    return {
        "event": "digest",
        "title": d.title,
        "link": d.link,
        "counts": d.counts,
        "total": d.total,
        "agents": d.agents,
        "items": [generic(n) for n in d.items],
        "from": d.since,
        "to": d.until,
    }


def _email_head(n: Notice, *, agent: bool = False) -> str:
    who = f" ({n.agent})" if agent and n.agent else ""
    return f"{n.title}{who}\n" + (f"{n.summary}\n" if n.summary else "")


def email(n: Notice) -> dict[str, object]:
    """Subject and plain-text body."""
    facts = "".join(f"{name}: {value}\n" for name, value in n.facts.items())
    return {
        "subject": short(f"[{n.event_label}] {n.title}", 150),
        "body": f"{_email_head(n)}\n{facts}\nOpen: {n.link}\n",
    }


def email_digest(d: Digest) -> dict[str, object]:
    """A digest as a mail: the counts, then each of the first items with its link, then the inbox."""
    items = "".join(f"\n{_email_head(n, agent=True)}Open: {n.link}\n" for n in d.items)
    more = f"\n… and {d.total - len(d.items)} more.\n" if d.total > len(d.items) else ""
    body = f"{d.title} ({d.since} to {d.until})\n{', '.join(d.words)}\n{items}{more}\nAll of them: {d.link}\n"
    return {"subject": short(f"[Digest] {d.title}", 150), "body": body}


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


def link_base_problem(base_url: str) -> str | None:
    """Why links built on ``base_url`` would not open on their readers' machines, or None: no
    host, or one that names the machine reading it (loopback, ``localhost``) or no machine at all
    (``0.0.0.0``, where a server listens)."""
    host = urllib.parse.urlsplit(base_url).hostname
    if not host:
        return "it names no host"
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is the reader's own machine"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if address.is_unspecified:
        return f"{host} is where a server listens, not an address to open"
    return f"{host} is a loopback address: the reader's own machine" if address.is_loopback else None


def retryable(status: int) -> bool:
    """A 4xx says the request itself is wrong (retrying sends the same one) except 429, a slow-down."""
    return status == 429 or status >= 500
