"""Parsing of watch notes ("fiches de veille", seed 004 section 2.1, flow B1): pure, no Django.

A note is a Markdown file with YAML front matter. Parsing is kept apart from storage so that the
rules (what a valid note is, where its title and summary come from) can be tested without a database
and reused by the directory indexer, the API and any future command alike.

Readings of the seed made here:

* Required fields (section 2.1, INV-295-02): ``title``, ``date``, ``verdict_veille`` and ``impact_pv``.
  The two enums (D-295-13/14) are strict: exact lower-case values, no accent folding (``modéré`` is
  refused, the enum says ``modere``).
* The title falls back to the first H1 of the body when the front matter has none (section 2.1,
  "H1 comme fallback title"); a title that is present but not a string is an error, not a fallback.
* ``date`` is an ISO calendar date: a YAML date (unquoted ``2025-06-01``), a YAML timestamp (its date
  part is kept) or a ``YYYY-MM-DD`` string.
* H-04: title and summary are checked best-effort: a title over 256 characters is refused, a summary
  longer than 2000 characters is cut (it is derived text, refusing the note for it would be harsh).
* Summary: the first paragraph under ``## Résumé`` (``Resume`` and any case accepted), else the first
  400 characters of the body.
* Every failing field is reported at once, so an API caller can fix them all in one go.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

__all__ = [
    "IMPACTS",
    "SUMMARY_FALLBACK_CHARS",
    "SUMMARY_MAX",
    "TITLE_MAX",
    "VERDICTS",
    "NoteError",
    "parse_note",
]

VERDICTS = ("signal", "bruit", "veille")
"""D-295-13: allowed values of ``verdict_veille``."""

IMPACTS = ("fort", "modere", "faible", "aucun")
"""D-295-14: allowed values of ``impact_pv``."""

TITLE_MAX = 256
SUMMARY_MAX = 2000
SUMMARY_FALLBACK_CHARS = 400

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")
_HEADING = re.compile(r"^#{1,6}\s")
_RESUME = re.compile(r"^##\s+r[ée]sum[ée]\s*:?\s*#*\s*$", re.IGNORECASE)
_HANDLER = YAMLHandler()


class NoteError(ValueError):
    """A note that cannot be indexed. ``errors`` lists every ``(field, reason)``; ``field`` is the first.

    ``front_matter`` is the field when the YAML block itself is missing or unreadable."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        self.field, self.reason = errors[0]
        super().__init__("; ".join(f"{field}: {reason}" for field, reason in errors))


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter as a mapping and the body after it."""
    if not _HANDLER.detect(text):
        raise NoteError([("front_matter", "missing YAML front matter (the file must start with ---)")])
    try:
        raw, body = _HANDLER.split(text)
    except ValueError:
        raise NoteError([("front_matter", "unterminated YAML front matter (no closing ---)")]) from None
    try:
        data = _HANDLER.load(raw)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a YAML date such as 2025-13-45
        reason = " ".join(str(exc).split())
        raise NoteError([("front_matter", f"invalid YAML: {reason}")]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise NoteError([("front_matter", "the front matter must be a mapping of fields")])
    return data, body


def _check_text(text: str) -> None:
    """Text that PostgreSQL could not store (NUL, lone surrogates from a JSON body) is refused here,
    as a field error, rather than failing the whole indexing transaction later."""
    if "\x00" in text:
        raise NoteError([("content", "contains NUL characters")])
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise NoteError([("content", "is not valid Unicode text (lone surrogate)")]) from None


def _first_h1(body: str) -> str | None:
    for line in body.splitlines():
        match = _H1.match(line.strip())
        if match:
            return match.group(1).strip()
    return None


def _title(meta: dict[str, Any], body: str, errors: list[tuple[str, str]]) -> str:
    value = meta.get("title")
    if value is None or (isinstance(value, str) and not value.strip()):
        value = _first_h1(body)
        if value is None:
            errors.append(("title", "missing (no `title` in the front matter and no H1 in the body)"))
            return ""
    if not isinstance(value, str):
        errors.append(("title", "must be a string"))
        return ""
    value = value.strip()
    if len(value) > TITLE_MAX:
        errors.append(("title", f"longer than {TITLE_MAX} characters"))
    return value


def _date(meta: dict[str, Any], errors: list[tuple[str, str]]) -> dt.date | None:
    value = meta.get("date")
    if value is None or value == "":
        errors.append(("date", "missing"))
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    errors.append(("date", f"not an ISO date (YYYY-MM-DD): {value!r}"))
    return None


def _choice(meta: dict[str, Any], field: str, allowed: tuple[str, ...], errors: list[tuple[str, str]]) -> str:
    value = meta.get(field)
    if value is None or value == "":
        errors.append((field, f"missing (one of {', '.join(allowed)})"))
        return ""
    if not isinstance(value, str) or value.strip() not in allowed:
        errors.append((field, f"{value!r} is not one of {', '.join(allowed)}"))
        return ""
    return value.strip()


def _tags(meta: dict[str, Any], errors: list[tuple[str, str]]) -> list[str]:
    """Tags as given, stripped and de-duplicated in order. A single string is one tag; numbers
    (``tags: [2025]``) are read as their text, since YAML typed them without the author asking."""
    value = meta.get("tags")
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        errors.append(("tags", "must be a list of strings"))
        return []
    tags: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            errors.append(("tags", f"must be a list of strings, not {type(item).__name__} {item!r}"))
            return []
        tag = str(item).strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def _summary(body: str) -> str:
    """First paragraph under ``## Résumé``, else the first 400 characters of the body."""
    lines = body.splitlines()
    for index, line in enumerate(lines):
        if _RESUME.match(unicodedata.normalize("NFC", line.strip())):
            paragraph: list[str] = []
            for following in lines[index + 1 :]:
                if _HEADING.match(following):
                    break
                if not following.strip():
                    if paragraph:
                        break
                    continue
                paragraph.append(following.rstrip())
            if paragraph:
                return "\n".join(paragraph).strip()[:SUMMARY_MAX]
            break
    return body.strip()[:SUMMARY_FALLBACK_CHARS]


def parse_note(text: str, path: str) -> dict[str, Any]:
    """The record of one note: ``{path, title, date, verdict_veille, impact_pv, summary, tags}``.

    Raises NoteError naming every failing field; nothing is half-parsed."""
    text = text.removeprefix("\ufeff")  # a BOM would hide the opening ---
    _check_text(text)
    meta, body = _front_matter(text)
    errors: list[tuple[str, str]] = []
    title = _title(meta, body, errors)
    date = _date(meta, errors)
    verdict = _choice(meta, "verdict_veille", VERDICTS, errors)
    impact = _choice(meta, "impact_pv", IMPACTS, errors)
    tags = _tags(meta, errors)
    if errors:
        raise NoteError(errors)
    return {
        "path": path,
        "title": title,
        "date": date,
        "verdict_veille": verdict,
        "impact_pv": impact,
        "summary": _summary(body),
        "tags": tags,
    }
