"""Watch notes ("fiches de veille", seed 004 section 2.1, flow B1): a directory of Markdown files
is the source of truth; the rows are its index.

The seed kept the notes as files plus JSONL/FAISS indexes rewritten by tempfile + rename; here a
transaction is the atomic rename. Indexing a directory upserts one row per valid file (keyed by its
absolute path), skips invalid files with a warning and goes on (INV-295-01), and removes the rows of
files that are gone or no longer valid, so that the rows under a directory are exactly its valid
notes (CA-295-01: "nb lignes == nb fiches valides"). Notes posted to the API are keyed by a relative
name, so indexing a directory never touches them. Each write is one transaction with its audit rows
and the embeddings of the rows it created or changed. The file format itself is memory/veille.py.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.utils.text import slugify

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import holds, provenance
from memory.indexing import schedule_embedding
from memory.models import Embedding, VeilleNote
from memory.veille import NoteError, parse_note

logger = logging.getLogger(__name__)

PATH_MAX = VeilleNote._meta.get_field("path").max_length
NOTE_FIELDS = ("title", "date", "verdict_veille", "impact_pv", "summary", "tags")


@dataclass
class IndexReport:
    """What one indexing run did. ``skipped`` holds ``(path, reason)`` for each invalid file."""

    directory: str
    indexed: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "indexed": self.indexed,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": len(self.skipped),
        }


def _lock_veille() -> None:
    """Veille writes take turns (they are rare): two runs never insert the same path at once."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('memory.veille'))")


def _note_files(root: Path) -> Iterator[Path]:
    """``**/*.md`` under ``root``, in a stable order. Hidden files and folders (``.obsidian/``,
    ``.git/``) are left out, as the seed's ``glob.glob(recursive=True)`` leaves them out."""
    for path in sorted(root.glob("**/*.md")):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            yield path


def _changed(note: VeilleNote, values: dict[str, Any]) -> bool:
    return any(getattr(note, name) != values[name] for name in NOTE_FIELDS)


def _remove_notes(notes: list[VeilleNote], *, actor: Principal, reasons: dict[str, str]) -> None:
    """Delete notes and their vectors (an Embedding has no foreign key to cascade), audited first."""
    for note in notes:
        record(
            actor=actor,
            action=AuditAction.VEILLE_REMOVED,
            target=note,
            path=note.path,
            reason=reasons.get(note.path, ""),
        )
    ids = [note.pk for note in notes]
    Embedding.objects.filter(kind="veille", object_id__in=ids).delete()
    VeilleNote.objects.filter(pk__in=ids).delete()


def index_veille(directory: Path, *, actor: Principal, warn: Callable[[str], None] | None = None) -> IndexReport:
    """Index every ``**/*.md`` note under ``directory`` (seed flow B1), in one transaction.

    An unreadable or invalid file is skipped with ``[veille] {path} skipped: {reason}`` (given to
    ``warn``, logged by default) and the run goes on (INV-295-01, TC-ERR-02). The rows under the
    directory end up being exactly its valid notes: rows of vanished or now-invalid files are
    removed, each with an audit row. A missing directory raises NotADirectoryError and changes
    nothing (a typo must not wipe the index)."""
    emit = warn or logger.warning
    root = Path(directory).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    report = IndexReport(directory=str(root))
    prefix = str(root).rstrip(os.sep) + os.sep

    found: dict[str, dict[str, Any]] = {}
    reasons: dict[str, str] = {}
    for file in _note_files(root):
        key = str(file)
        try:
            if len(key) > PATH_MAX:
                raise NoteError([("path", f"longer than {PATH_MAX} characters")])
            found[key] = parse_note(file.read_text(encoding="utf-8"), key)
        except (OSError, UnicodeDecodeError, NoteError) as exc:
            reason = str(exc) if isinstance(exc, NoteError) else f"cannot read: {exc.__class__.__name__}: {exc}"
            report.skipped.append((key, reason))
            reasons[key] = f"invalid: {reason}"
            emit(f"[veille] {key} skipped: {reason}")

    with transaction.atomic(durable=True):
        _lock_veille()
        existing = {note.path: note for note in VeilleNote.objects.filter(path__startswith=prefix)}
        new = [VeilleNote(**values) for path, values in found.items() if path not in existing]
        VeilleNote.objects.bulk_create(new)
        changed = [added.pk for added in new]
        for added in new:
            record(actor=actor, action=AuditAction.VEILLE_INDEXED, target=added, path=added.path)
        for path, values in found.items():
            note = existing.get(path)
            if note is None:
                continue
            if not _changed(note, values):
                report.unchanged += 1
                continue
            for name in NOTE_FIELDS:
                setattr(note, name, values[name])
            note.save()
            changed.append(note.pk)
            report.updated += 1
            record(actor=actor, action=AuditAction.VEILLE_UPDATED, target=note, path=path)
        gone = [note for path, note in existing.items() if path not in found]
        _remove_notes(gone, actor=actor, reasons={note.path: reasons.get(note.path, "file removed") for note in gone})
        schedule_embedding("veille", changed)
    report.indexed = len(new)
    report.removed = len(gone)
    return report


def check_note_name(name: str) -> str:
    """The name of an API-posted note: a relative path such as ``2025/llm-pricing.md``. Never
    absolute, so it can never be mistaken for (or removed with) a file of an indexed directory."""
    name = name.strip()
    if not name:
        raise NoteError([("name", "must not be empty")])
    if len(name) > PATH_MAX:
        raise NoteError([("name", f"longer than {PATH_MAX} characters")])
    if name.startswith(("/", "\\")) or "\\" in name or ".." in name.split("/"):
        raise NoteError([("name", "must be a relative path without '..' or backslashes")])
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise NoteError([("name", "must not contain control characters")])
    return name


def _note_errors(exc: NoteError, prefix: tuple[str, ...]) -> InvalidInput:
    errors = [{"loc": [*prefix, name], "msg": reason, "type": "veille_invalid"} for name, reason in exc.errors]
    return InvalidInput(f"The note is invalid: {exc}", errors=errors)


def add_note(text: str, name: str | None, *, actor: Principal) -> tuple[VeilleNote, bool]:
    """Store one note posted to the API; returns ``(note, created)``. A note with the same name is
    replaced (upsert, as indexing a changed file). Without a name, ``api/{date}-{slug of title}.md``
    is used, so re-posting the same note updates it. Raises InvalidInput naming every failing field
    (``["body", field]``); nothing is written then."""
    try:
        key = check_note_name(name) if name is not None else None
        values = parse_note(text, key or "")
    except NoteError as exc:
        raise _note_errors(exc, ("body",)) from exc
    if key is None:
        key = f"api/{values['date'].isoformat()}-{slugify(values['title'])[:120] or 'note'}.md"
        values["path"] = key
    provenance.check_watch_note_write(actor)
    # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
    with transaction.atomic():
        _lock_veille()
        existing = VeilleNote.objects.filter(path=key).first()
        created = existing is None
        if existing is not None:
            provenance.check_note_owner(actor, existing.author_id)
            if actor.agent is not None and existing.held_at is not None:
                raise Forbidden("This watch note is held for a reviewer: it cannot change until they decide.")
        reasons = holds.screen_note(actor, values["title"], values["summary"])
        if existing is None:
            note = VeilleNote.objects.create(**values, **holds.held(reasons), author=actor.agent)
            record(actor=actor, action=AuditAction.VEILLE_INDEXED, target=note, path=key)
        elif _changed(note := existing, values):
            changes = {name_: values[name_] for name_ in NOTE_FIELDS}
            for name_, value in {**changes, **holds.held(reasons)}.items():
                setattr(note, name_, value)
            note.save()
            record(actor=actor, action=AuditAction.VEILLE_UPDATED, target=note, path=key)
        else:
            return existing, False
        if reasons:
            holds.ask_reviewer(note, reasons, actor=actor)
        schedule_embedding("veille", [note.pk])
    return note, created
