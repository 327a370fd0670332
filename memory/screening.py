"""Text that speaks to the model instead of stating a lesson (pure; no Django).

Shared memory is pasted into other agents' prompts (the step-0 block), so a learning or a watch
note written by an agent is a prompt another agent will read. A lesson states what was learned;
an injection addresses the reader: it tells the model to ignore its instructions, hides characters
the reviewer cannot see, or sends it to a place the domain has never linked to. Such an item is
held for a reviewer before any block serves it (memory/holds.py); this module only says why.

It is a tripwire, not a proof: it catches the phrasings and tricks known from prompt-injection
corpora (OWASP LLM01, the "ignore previous instructions" family, in English and French, the
seeds' languages) and costs one regular expression pass. Whatever it misses is still bound by
the write reach (an agent writes only where its manifest lets it) and can be quarantined with
the rest of its author's items.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

# Phrases that address the model. Each is matched case-insensitively over the text with its
# whitespace collapsed, so a line break does not split a phrase.
_OVERRIDES = [
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|your|system|any)\b"
    r".{0,20}\b(instructions?|prompts?|rules|directives?|guidelines|context)\b",
    r"\byou are (now|no longer)\b",
    r"\b(new|updated|revised) (system )?(instructions?|prompt)\s*:",
    r"\bact as (an?|the) (unrestricted|jailbroken|different|new)\b",
    r"\bdo not (tell|inform|alert|notify) (the )?(user|operator|reviewer|human)s?\b",
    r"\b(send|email|e-mail|post|upload|exfiltrate|forward)\b.{0,60}\bto\b.{0,10}[\w.+-]+@[\w-]+\.[\w.]+",
    r"\b(ignore[zr]?|oublie[zr]?)\b.{0,40}\b(instructions?|consignes?|règles)\b",
    r"\b(tu es|vous êtes) (désormais|maintenant)\b",
    r"\b(nouvelles?) (instructions?|consignes?)\s*:",
    r"</?(system|assistant|user|instructions?)>",
    r"\[/?(INST|SYS)\]",
]
OVERRIDE = re.compile("|".join(f"(?:{pattern})" for pattern in _OVERRIDES), re.IGNORECASE)

URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`)\]]+", re.IGNORECASE)

# Characters a reviewer does not see: format characters (zero-width, bidi controls, tags), the
# private use area, and the variation selectors that can carry data.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Co"})
_VARIATION_SELECTORS = (range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))

OVERRIDE_REASON = "it addresses the model (an instruction, not a lesson): {phrase!r}"
INVISIBLE_REASON = "it holds {count} invisible character(s) ({names})"
LINK_REASON = "it links to {host}, which no served item of the domain links to"


def invisible_characters(text: str) -> list[str]:
    """The invisible characters of ``text``, by Unicode name, in order of appearance."""
    found = []
    for char in text:
        code = ord(char)
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES or any(code in r for r in _VARIATION_SELECTORS):
            found.append(unicodedata.name(char, f"U+{code:04X}"))
    return found


def link_hosts(text: str) -> list[str]:
    """The hosts ``text`` links to, lower-cased, each once, in order."""
    hosts: dict[str, None] = {}
    for match in URL.finditer(text):
        host = (urlsplit(match.group(0)).hostname or "").lower().rstrip(".")
        if host:
            hosts[host] = None
    return list(hosts)


def screen(text: str, *, seen_host: Callable[[str], bool]) -> list[str]:
    """Why ``text`` must be held for review (empty: it may be served). ``seen_host(host)`` says
    whether the domain's served items already link to ``host``; it is asked only for the hosts
    the text links to, so a text without links costs no query."""
    reasons = []
    flat = " ".join(text.split())
    match = OVERRIDE.search(flat)
    if match:
        reasons.append(OVERRIDE_REASON.format(phrase=match.group(0)[:80]))
    invisible = invisible_characters(text)
    if invisible:
        names = ", ".join(dict.fromkeys(invisible))
        reasons.append(INVISIBLE_REASON.format(count=len(invisible), names=names[:200]))
    reasons += [LINK_REASON.format(host=host) for host in link_hosts(text) if not seen_host(host)]
    return reasons


def screen_all(texts: Iterable[str], *, seen_host: Callable[[str], bool]) -> list[str]:
    """``screen`` over the parts of one item (a note's title and summary), reasons once each."""
    return list(dict.fromkeys(reason for text in texts for reason in screen(text, seen_host=seen_host)))
