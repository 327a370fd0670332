"""Import and export of the seed's learnings files (seed 004): learnings.jsonl,
learnings-archive.jsonl and learnings-injections.jsonl, to and from the memory tables.

Why a service of its own: the file-based system is where every existing learning lives, and it
keeps running next to this one for a while, so files must come in (and go back out) any number of
times without drift. Hence the rules below:

* Idempotent (TC-NOM-08): a line identical to a learning already stored (same story, gate,
  tags_hash and text) is skipped, so importing the same file twice adds nothing. Injections are
  skipped the same way when the very same injection (learning, story, domain, project, time) exists.
* The scope migration happens on the way in (seed --migrate): an entry without `scope` becomes
  `story`; an entry with one keeps it; every imported row carries the `scope_migrated_at` sentinel
  (the line's own when it has one), so the lifecycle's migration is a no-op for it.
* One canonicalisation (INV-plan-03): tags go through `canonical_tags` and the hash is recomputed
  with `compute_tags_hash`; a line whose own `tags_hash` differs is counted as corrected and logged.
  Injection lines carrying the old hash still match, through the corrections seen in this run.
* Bad lines never stop a file (TC-ERR-01): each is rejected with
  `[import] rejected: line N: reason` and the valid lines go on. A missing injections (or
  archive) file is an empty corpus with a note (TC-ERR-03).
* Large files: lines are parsed in a stream and written with `bulk_create` in batches, one
  transaction per file, so 100k lines take seconds and a crash leaves the file wholly out.
  Embeddings are scheduled per batch, after commit, like every other producer does.

Export writes the same formats back (dates ISO 8601), from one consistent snapshot, each file
through a temporary file renamed into place (seed section 2.7: a reader never sees half a file).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import scoring
from memory.indexing import schedule_embedding
from memory.learnings import GateVerdict, record_gate_results
from memory.models import GateResult, Learning, LearningInjection, ReuseScore
from memory.privacy import LearningKey, erased_learnings
from memory.tags import canonical_tags, compute_tags_hash

logger = logging.getLogger(__name__)

LEARNINGS_FILE = "learnings.jsonl"
ARCHIVE_FILE = "learnings-archive.jsonl"
INJECTIONS_FILE = "learnings-injections.jsonl"

BATCH_SIZE = 2000
"""Lines per bulk insert: large enough to amortise round trips, small enough to keep memory flat."""
EMBED_BATCH = 500
"""Learnings per embedding task: one task per batch instead of one per row (or one for 100k)."""
PROGRESS_EVERY = 1000
"""`progress` is called every this many lines: small files never see it, large ones see it move."""

_KEY_MAX = 100  # story, domain, project columns
_GATE_MAX = 99  # as the API accepts
_SCOPES = {choice.value for choice in Learning.Scope}
_EXPORT_FIELDS = (
    "story",
    "gate",
    "domain",
    "project",
    "tags",
    "tags_hash",
    "text",
    "scope",
    "date_created",
    "date",
    "scope_migrated_at",
)

Warn = Callable[[str], None]
Progress = Callable[[int], None]
Key = LearningKey  # (story, gate, tags_hash, text): a learning's identity for idempotence
HashAliases = dict[tuple[str, int, str], str | None]
"""(story, gate, tags_hash as a line carried it) -> the canonical tags_hash, or None when one old hash
was corrected to several (a constant placeholder hash, say): then it names no learning for sure."""


class InvalidLine(ValueError):
    """A line that cannot be imported; its message is the reason given to the operator."""


@dataclass
class ImportReport:
    """What one file did. `lines` counts non-blank lines; `rejected` holds (line number, reason)."""

    source: str
    kind: str  # learnings | archive | injections | gate_results
    lines: int = 0
    created: int = 0
    skipped: int = 0
    migrated: int = 0
    corrected: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    missing: bool = False
    seconds: float = 0.0
    hash_corrections: HashAliases = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "lines": self.lines,
            "created": self.created,
            "skipped": self.skipped,
            "migrated": self.migrated,
            "corrected": self.corrected,
            "rejected": len(self.rejected),
            "missing": self.missing,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class ExportReport:
    directory: str
    learnings: int
    archived: int
    injections: int


@dataclass(frozen=True)
class _ImportedFile:
    """The audit row of an import points at the file: one row per file, not one per learning."""

    pk: str
    _meta = SimpleNamespace(label_lower="memory.imported_file")


@dataclass
class _Pending:
    number: int
    values: dict[str, Any]
    key: Key
    migrated: bool = False


# --- Line validation (pure) ------------------------------------------------------------------------


def _load(raw: str) -> dict[str, Any]:
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidLine("not valid UTF-8") from None
    try:
        entry = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidLine(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(entry, dict):
        raise InvalidLine(f"not a JSON object but {type(entry).__name__}")
    return entry


def _require(entry: dict[str, Any], names: Iterable[str]) -> None:
    missing = [name for name in names if entry.get(name) is None]
    if missing:
        raise InvalidLine(f"missing field(s): {', '.join(missing)}")


def _storable(value: str, name: str) -> str:
    """PostgreSQL text holds neither NUL nor lone surrogates (a JSON `\\ud800` decodes to one)."""
    if "\x00" in value:
        raise InvalidLine(f"field {name!r} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidLine(f"field {name!r} is not valid Unicode") from None
    return value


def _string(entry: dict[str, Any], name: str, *, max_length: int | None = None) -> str:
    value = entry[name]
    if not isinstance(value, str):
        raise InvalidLine(f"field {name!r} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidLine(f"field {name!r} is empty")
    if max_length is not None and len(value) > max_length:
        raise InvalidLine(f"field {name!r} is longer than {max_length} characters")
    return _storable(value, name)


def _gate(entry: dict[str, Any]) -> int:
    value = entry["gate"]
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidLine(f"field 'gate' must be an integer, got {type(value).__name__}")
    if not 0 <= value <= _GATE_MAX:
        raise InvalidLine(f"field 'gate' must be between 0 and {_GATE_MAX}, got {value}")
    return value


def _tags(entry: dict[str, Any]) -> tuple[list[str], str]:
    value = entry.get("tags")
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise InvalidLine("field 'tags' must be a list of strings")
    for tag in value:
        _storable(tag, "tags")
    return canonical_tags(value), compute_tags_hash(value)


def _given_hash(entry: dict[str, Any]) -> str | None:
    value = entry.get("tags_hash")
    if value is not None and not isinstance(value, str):
        raise InvalidLine(f"field 'tags_hash' must be a string, got {type(value).__name__}")
    return value


def _date(entry: dict[str, Any], name: str) -> date | None:
    """ISO date; a full ISO datetime is accepted too and gives its date (older producers wrote those)."""
    value = entry.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidLine(f"field {name!r} must be an ISO date string, got {type(value).__name__}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        raise InvalidLine(f"field {name!r} is not an ISO date: {value[:40]!r}") from None


def _datetime(entry: dict[str, Any], name: str) -> datetime | None:
    """ISO datetime (a bare date is midnight); without an offset it is read as UTC, as the seed wrote UTC."""
    value = entry.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidLine(f"field {name!r} must be an ISO datetime string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidLine(f"field {name!r} is not an ISO datetime: {value[:40]!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_learning(raw: str, *, archive: bool, now: datetime) -> tuple[dict[str, Any], str | None, bool]:
    """One learnings (or archive) line as Learning field values, the tags_hash the line carried,
    and whether the scope was migrated (the line had none). Raises InvalidLine."""
    entry = _load(raw)
    _require(entry, ("story", "gate", "domain", "project", "text"))
    tags, tags_hash = _tags(entry)
    given_hash = _given_hash(entry)
    scope = entry.get("scope")
    if scope is not None and (not isinstance(scope, str) or scope not in _SCOPES):
        raise InvalidLine(f"field 'scope' must be one of {', '.join(sorted(_SCOPES))}, got {str(scope)[:40]!r}")
    migrated = scope is None
    values = {
        "story": _string(entry, "story", max_length=_KEY_MAX),
        "gate": _gate(entry),
        "domain": _string(entry, "domain", max_length=_KEY_MAX),
        "project": _string(entry, "project", max_length=_KEY_MAX),
        "tags": tags,
        "tags_hash": tags_hash,
        "text": _string(entry, "text"),
        "scope": Learning.Scope.ARCHIVED if archive else (scope or Learning.Scope.STORY),
        "date_created": _date(entry, "date_created"),
        "date": _date(entry, "date"),
        "scope_migrated_at": _datetime(entry, "scope_migrated_at") or now,
        "archived_at": _datetime(entry, "archived_at"),
    }
    if values["scope"] == Learning.Scope.ARCHIVED and values["archived_at"] is None:
        values["archived_at"] = now
    return values, given_hash, migrated and not archive


def parse_injection(raw: str, *, hash_aliases: HashAliases) -> dict[str, Any]:
    """One injections line: the learning's key (story, gate, tags_hash or tags, text if given) and
    the injection (injected_into, domain, project, injected_at). Raises InvalidLine."""
    entry = _load(raw)
    _require(entry, ("story", "gate", "injected_into", "domain", "injected_at"))
    story, gate = _string(entry, "story", max_length=_KEY_MAX), _gate(entry)
    given_hash = _given_hash(entry)
    if entry.get("tags") is not None:
        tags_hash = _tags(entry)[1]
    elif given_hash is not None:
        tags_hash = hash_aliases.get((story, gate, given_hash), given_hash)
        if tags_hash is None:
            raise InvalidLine(
                f"tags_hash {given_hash[:16]} was corrected to several hashes for this story and gate; give the tags"
            )
    else:
        raise InvalidLine("missing field(s): tags_hash (or tags)")
    text = entry.get("text")
    if text is not None and not isinstance(text, str):
        raise InvalidLine(f"field 'text' must be a string, got {type(text).__name__}")
    return {
        "key": (story, gate, tags_hash),
        "text": text,
        "given_hash": given_hash,
        "story": _string(entry, "injected_into", max_length=_KEY_MAX),
        "domain": _string(entry, "domain", max_length=_KEY_MAX),
        "project": _string(entry, "project", max_length=_KEY_MAX) if entry.get("project") not in (None, "") else "",
        "at": _datetime(entry, "injected_at"),
    }


def parse_gate_result(raw: str) -> GateVerdict:
    """One gate-results line: story, gate, verdict (GO or NO_GO) and at (ISO datetime, UTC without
    an offset). Raises InvalidLine."""
    entry = _load(raw)
    _require(entry, ("story", "gate", "verdict", "at"))
    verdict = entry["verdict"]
    if verdict not in GateResult.Verdict.values:
        raise InvalidLine(f"field 'verdict' must be one of {', '.join(GateResult.Verdict.values)}, got {verdict!r}")
    at = _datetime(entry, "at")
    if at is None:
        raise InvalidLine("missing field(s): at")
    return GateVerdict(_string(entry, "story", max_length=_KEY_MAX), _gate(entry), verdict, at)


# --- Import ----------------------------------------------------------------------------------------


def _lock() -> None:
    """Imports take turns: two runs of the same file at once would both see a line as new."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('memory.transfer'))")


def _reject(report: ImportReport, number: int, reason: str, warn: Warn) -> None:
    report.rejected.append((number, reason))
    warn(f"[import] rejected: line {number}: {reason}")


def _add_alias(aliases: HashAliases, old: tuple[str, int, str], new: str | None) -> None:
    """Remember a correction; one old key corrected two ways becomes None (ambiguous), not the last."""
    aliases[old] = new if aliases.get(old, new) == new else None


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


_EXISTING_LEARNINGS = """
    SELECT k.i
      FROM unnest(%s::text[], %s::int[], %s::text[], %s::text[])
           WITH ORDINALITY AS k(story, gate, tags_hash, text, i)
     CROSS JOIN LATERAL (
           SELECT 1 FROM memory_learning l
            WHERE l.story = k.story AND l.gate = k.gate AND l.tags_hash = k.tags_hash AND l.text = k.text
            LIMIT 1
     ) found
"""
"""Which lines of a batch are stored already. LATERAL ... LIMIT 1 keeps it one index probe per line
(the score-key index): inside an import, statistics lag far behind the table, and a planner that
believes it small hashes the whole table for every batch instead."""


def _existing(sql: str, columns: list[list[Any]]) -> set[int]:
    """Positions (0-based) of the batch items the query finds: the batch goes to PostgreSQL as arrays
    and is joined on the index, so the cost follows the batch, not the table nor how many rows
    share a story."""
    with connection.cursor() as cursor:
        cursor.execute(sql, columns)
        return {position - 1 for (position,) in cursor.fetchall()}


def _flush_learnings(pending: list[_Pending], report: ImportReport, created_by: str, warn: Warn) -> None:
    """Insert the batch's new learnings; lines identical to a stored learning (or to an earlier
    line of the batch) are skipped, and so are learnings an operator erased or redacted."""
    if not pending:
        return
    stored = _existing(_EXISTING_LEARNINGS, [list(column) for column in zip(*(p.key for p in pending), strict=True)])
    erased = erased_learnings(item.key for item in pending)
    seen: set[Key] = set()
    new: list[Learning] = []
    for position, item in enumerate(pending):
        if item.key in erased:
            warn(f"[import] skipped: line {item.number}: erased or redacted by an operator")
        if position in stored or item.key in seen or item.key in erased:
            report.skipped += 1
            continue
        seen.add(item.key)
        new.append(Learning(**item.values, created_by=created_by))
        report.migrated += item.migrated
    Learning.objects.bulk_create(new)
    for ids in _chunks([learning.pk for learning in new], EMBED_BATCH):
        schedule_embedding("learning", ids)
    report.created += len(new)


def _finish(report: ImportReport, action: AuditAction, *, actor: Principal, started: float) -> ImportReport:
    report.seconds = time.monotonic() - started
    record(
        actor=actor,
        action=action,
        target=_ImportedFile(report.source[:200]),
        **{k: v for k, v in report.as_dict().items() if k not in ("source", "seconds")},
    )
    return report


def import_learnings(
    lines: Iterable[str],
    *,
    source: str,
    actor: Principal,
    progress: Progress | None = None,
    archive: bool = False,
    warn: Warn | None = None,
) -> ImportReport:
    """Import a learnings.jsonl stream (or learnings-archive.jsonl with ``archive=True``: every
    row becomes scope archived, with the line's `archived_at` or now), in one transaction.

    ``warn`` receives the `[import] ...` messages (logged by default); ``progress`` receives the
    number of lines read every PROGRESS_EVERY lines and once at the end."""
    warn = warn or logger.warning
    report = ImportReport(source=source, kind="archive" if archive else "learnings")
    started, now = time.monotonic(), timezone.now()
    number = 0
    with transaction.atomic(durable=True):
        _lock()
        pending: list[_Pending] = []
        for number, raw in enumerate(lines, start=1):
            if progress is not None and number % PROGRESS_EVERY == 0:
                progress(number)
            if not raw.strip():
                continue
            report.lines += 1
            try:
                values, given_hash, migrated = parse_learning(raw, archive=archive, now=now)
            except (InvalidLine, TypeError) as exc:
                _reject(report, number, str(exc), warn)
                continue
            if given_hash is not None and given_hash != values["tags_hash"]:
                report.corrected += 1
                _add_alias(report.hash_corrections, (values["story"], values["gate"], given_hash), values["tags_hash"])
                warn(f"[import] corrected: line {number}: tags_hash {given_hash[:16]} -> {values['tags_hash'][:16]}")
            key = (values["story"], values["gate"], values["tags_hash"], values["text"])
            pending.append(_Pending(number, values, key, migrated))
            if len(pending) >= BATCH_SIZE:
                _flush_learnings(pending, report, actor.label, warn)
                pending = []
        _flush_learnings(pending, report, actor.label, warn)
        action = AuditAction.MEMORY_ARCHIVE_IMPORTED if archive else AuditAction.MEMORY_LEARNINGS_IMPORTED
        _finish(report, action, actor=actor, started=started)
    if progress is not None:
        progress(number)
    return report


_CANDIDATES = """
    SELECT k.i, l.id, l.text = k.text
      FROM unnest(%s::text[], %s::int[], %s::text[], %s::text[])
           WITH ORDINALITY AS k(story, gate, tags_hash, text, i)
     CROSS JOIN LATERAL (
           SELECT id, text FROM memory_learning
            WHERE story = k.story AND gate = k.gate AND tags_hash = k.tags_hash
     ) l
"""
"""The learnings each injection line may name, with whether its text is the line's (one index probe
per line, as for `_EXISTING_LEARNINGS`)."""

_EXISTING_INJECTIONS = """
    SELECT k.i
      FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::timestamptz[])
           WITH ORDINALITY AS k(learning_id, story, domain, project, at, i)
     CROSS JOIN LATERAL (
           SELECT 1 FROM memory_learninginjection j
            WHERE j.learning_id = k.learning_id AND j.story = k.story AND j.domain = k.domain
              AND j.project = k.project AND j.at = k.at
            LIMIT 1
     ) found
"""


def _match(candidates: list[tuple[int, bool]], has_text: bool) -> int | str:
    """The learning an injection line names, or why none: the one with the same text when the line
    gives one, else the key's learning when the key is unique (the seed joins on the key alone)."""
    exact = [pk for pk, same_text in candidates if same_text]
    if has_text and exact:
        return min(exact)
    if len(candidates) == 1:
        return candidates[0][0]
    if not candidates:
        return "no learning with this (story, gate, tags_hash)"
    return f"{len(candidates)} learnings share this (story, gate, tags_hash) and no text matches one of them"


def _flush_injections(pending: list[tuple[int, dict[str, Any]]], report: ImportReport, warn: Warn) -> None:
    if not pending:
        return
    keys = [(*item["key"], item["text"]) for _, item in pending]
    candidates: dict[int, list[tuple[int, bool]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_CANDIDATES, [list(column) for column in zip(*keys, strict=True)])
        for position, pk, same_text in cursor.fetchall():
            candidates.setdefault(position - 1, []).append((pk, bool(same_text)))
    matched: list[tuple[dict[str, Any], int]] = []
    for position, (number, item) in enumerate(pending):
        found = _match(candidates.get(position, []), item["text"] is not None)
        if isinstance(found, str):
            _reject(report, number, found, warn)
        else:
            matched.append((item, found))
    if not matched:
        return
    identities = [(pk, item["story"], item["domain"], item["project"], item["at"]) for item, pk in matched]
    stored = _existing(_EXISTING_INJECTIONS, [list(column) for column in zip(*identities, strict=True)])
    seen: set[tuple] = set()
    new: list[LearningInjection] = []
    for position, identity in enumerate(identities):
        if position in stored or identity in seen:
            report.skipped += 1
            continue
        seen.add(identity)
        pk, story, domain, project, at = identity
        new.append(LearningInjection(learning_id=pk, story=story, domain=domain, project=project, at=at))
    scoring.hold_inputs()
    LearningInjection.objects.bulk_create(new)
    report.created += len(new)


def import_injections(
    lines: Iterable[str],
    *,
    source: str,
    actor: Principal,
    progress: Progress | None = None,
    warn: Warn | None = None,
    hash_aliases: HashAliases | None = None,
) -> ImportReport:
    """Import a learnings-injections.jsonl stream in one transaction; import the learnings first.

    Each line is matched to its learning (see `_match`); an unmatched line is rejected with the
    reason. ``hash_aliases`` (the learnings reports' `hash_corrections`) maps a (story, gate, old
    tags_hash) corrected while importing the learnings to the canonical hash, so injection lines
    written by the same old producer still find their learning."""
    warn = warn or logger.warning
    aliases = hash_aliases or {}
    report = ImportReport(source=source, kind="injections")
    started = time.monotonic()
    number = 0
    with transaction.atomic(durable=True):
        _lock()
        pending: list[tuple[int, dict[str, Any]]] = []
        for number, raw in enumerate(lines, start=1):
            if progress is not None and number % PROGRESS_EVERY == 0:
                progress(number)
            if not raw.strip():
                continue
            report.lines += 1
            try:
                item = parse_injection(raw, hash_aliases=aliases)
            except (InvalidLine, TypeError) as exc:
                _reject(report, number, str(exc), warn)
                continue
            if item["given_hash"] is not None and item["given_hash"] != item["key"][2]:
                report.corrected += 1
                warn(f"[import] corrected: line {number}: tags_hash {item['given_hash'][:16]} -> {item['key'][2][:16]}")
            pending.append((number, item))
            if len(pending) >= BATCH_SIZE:
                _flush_injections(pending, report, warn)
                pending = []
        _flush_injections(pending, report, warn)
        _finish(report, AuditAction.MEMORY_INJECTIONS_IMPORTED, actor=actor, started=started)
    if progress is not None:
        progress(number)
    return report


def read_lines(path: Path) -> Iterator[str]:
    """The file's lines, streamed. Undecodable bytes survive as surrogates so that the line, not
    the whole file, is rejected (`not valid UTF-8`)."""
    with Path(path).open(encoding="utf-8", errors="surrogateescape") as handle:
        yield from handle


def import_gate_results(path: Path, *, actor: Principal, warn: Warn = logger.warning) -> ImportReport:
    """A file of past gate results (one JSON object a line, ``parse_gate_result``), all or nothing:
    every bad line is reported with its number (``[import] rejected: line N: reason``) and then the
    file is refused whole, since a gap in a verdict history would silently change scores. A valid
    file goes through ``record_gate_results`` (lines already stored are skipped)."""
    started = time.monotonic()
    report = ImportReport(source=str(path), kind="gate_results")
    results = []
    for number, raw in enumerate(read_lines(path), start=1):
        if not raw.strip():
            continue
        report.lines += 1
        try:
            results.append(parse_gate_result(raw))
        except InvalidLine as exc:
            _reject(report, number, str(exc), warn)
    if not report.rejected:
        report.created, report.skipped = record_gate_results(actor=actor, results=results)
    report.seconds = time.monotonic() - started
    return report


def import_files(
    learnings: Path,
    *,
    actor: Principal,
    archive: Path | None = None,
    injections: Path | None = None,
    progress: Callable[[str, int], None] | None = None,
    warn: Warn | None = None,
) -> list[ImportReport]:
    """Import learnings, then the archive, then injections (which refer to both), each file in its
    own transaction. The learnings file must exist (FileNotFoundError); a missing archive or
    injections file is an empty corpus with a note (TC-ERR-03), as the seed's scoring treats it."""
    warn = warn or logger.warning
    if not Path(learnings).is_file():
        raise FileNotFoundError(f"{learnings}: no such file")

    def tick(name: Path) -> Progress | None:
        return None if progress is None else lambda count: progress(str(name), count)

    reports = [
        import_learnings(read_lines(learnings), source=str(learnings), actor=actor, progress=tick(learnings), warn=warn)
    ]
    if archive is not None:
        if Path(archive).is_file():
            reports.append(
                import_learnings(
                    read_lines(archive),
                    source=str(archive),
                    actor=actor,
                    archive=True,
                    progress=tick(archive),
                    warn=warn,
                )
            )
        else:
            warn(f"[import] archive corpus empty: {archive} not found")
            reports.append(ImportReport(source=str(archive), kind="archive", missing=True))
    if injections is not None:
        if Path(injections).is_file():
            aliases: HashAliases = {}
            for report in reports:
                for old, new in report.hash_corrections.items():
                    _add_alias(aliases, old, new)
            reports.append(
                import_injections(
                    read_lines(injections),
                    source=str(injections),
                    actor=actor,
                    progress=tick(injections),
                    warn=warn,
                    hash_aliases=aliases,
                )
            )
        else:
            warn(f"[import] injections corpus empty: {injections} not found")
            reports.append(ImportReport(source=str(injections), kind="injections", missing=True))
    return reports


# --- Export ----------------------------------------------------------------------------------------


def _iso(value: date | datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def learning_line(row: dict[str, Any], *, archive: bool = False) -> dict[str, Any]:
    """A learning as the seed wrote it: absent values are left out rather than written as null."""
    line = {name: row[name] for name in _EXPORT_FIELDS}
    for name in ("date_created", "date", "scope_migrated_at"):
        line[name] = _iso(line[name])
    if archive:
        line["archived_at"] = _iso(row["archived_at"])
    return {name: value for name, value in line.items() if value is not None}


def _learning_rows(*, archived: bool) -> Iterator[dict[str, Any]]:
    rows = Learning.objects.order_by("pk")
    rows = rows.filter(scope=Learning.Scope.ARCHIVED) if archived else rows.exclude(scope=Learning.Scope.ARCHIVED)
    for row in rows.values(*_EXPORT_FIELDS, "archived_at").iterator(chunk_size=BATCH_SIZE):
        yield learning_line(row, archive=archived)


def _injection_rows() -> Iterator[dict[str, Any]]:
    fields = (
        "learning__story",
        "learning__gate",
        "learning__tags_hash",
        "learning__text",
        "story",
        "domain",
        "project",
        "at",
    )
    rows = LearningInjection.objects.order_by("pk").values_list(*fields)
    for story, gate, tags_hash, text, injected_into, domain, project, at in rows.iterator(chunk_size=BATCH_SIZE):
        line = {
            "story": story,
            "gate": gate,
            "tags_hash": tags_hash,
            "text": text,
            "injected_into": injected_into,
            "domain": domain,
            "project": project,
            "injected_at": _iso(at),
        }
        if not project:  # optional on the way in, so left out rather than written empty
            del line["project"]
        yield line


def _write_jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``: a reader
    sees the old file or the new one, never half of one (seed section 2.7, INV-plan-06)."""
    count = 0
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                count += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count


def export_learnings(out_dir: Path) -> ExportReport:
    """Write learnings.jsonl (live learnings), learnings-archive.jsonl and learnings-injections.jsonl
    under ``out_dir``, in id order, from one snapshot: an injection exported always names a learning
    exported with it, even while agents keep writing."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    outermost = not connection.in_atomic_block
    with transaction.atomic(durable=True):
        if outermost:  # a snapshot of the first query for all three files
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        learnings = _write_jsonl(directory / LEARNINGS_FILE, _learning_rows(archived=False))
        archived = _write_jsonl(directory / ARCHIVE_FILE, _learning_rows(archived=True))
        injections = _write_jsonl(directory / INJECTIONS_FILE, _injection_rows())
    return ExportReport(directory=str(directory), learnings=learnings, archived=archived, injections=injections)


SCORE_FIELDS = ("story", "gate", "tags_hash", "nb_injections", "nb_stories_gate8_go", "nb_domains", "reuse_score")


def reuse_score_lines(*, story: str | None = None, domain: str | None = None) -> Iterator[dict[str, Any]]:
    """Each reuse score as a line of the seed's learnings-scores.jsonl (its key, its three counts,
    the score as a number, when it was computed), by key. ``story`` is the key's story; ``domain``
    keeps the keys of which some learning belongs to that domain."""
    rows = ReuseScore.objects.order_by("story", "gate", "tags_hash")
    if story is not None:
        rows = rows.filter(story=story)
    if domain is not None:
        of_domain = Learning.objects.filter(
            story=OuterRef("story"), gate=OuterRef("gate"), tags_hash=OuterRef("tags_hash"), domain=domain
        )
        rows = rows.filter(Exists(of_domain))
    for row in rows.values(*SCORE_FIELDS, "computed_at").iterator(chunk_size=BATCH_SIZE):
        yield {**row, "reuse_score": float(row["reuse_score"]), "computed_at": _iso(row["computed_at"])}


def export_reuse_scores(path: Path, *, story: str | None = None, domain: str | None = None) -> int:
    """Write the scores to ``path`` (renamed into place, as the learnings files); returns the lines."""
    return _write_jsonl(Path(path), reuse_score_lines(story=story, domain=domain))
