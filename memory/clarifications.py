"""PO clarifications (seed 004 section 2.2, flow B2): the four answers of a story, verbatim.

The answers are stored as given (INV-295-03: the SHA-256 of each answer given equals that of the
answer stored) as one version; calling again for the same story makes version + 1 (H-06, ré-entrée),
named like the seed's files, and the newest version is the one returned by default. Versions are
numbered under a per-story advisory lock, so concurrent calls never share one. Each write is one
transaction with its audit rows and the embeddings of the rows it created.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
from typing import Any
from uuid import UUID

import yaml
from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import DomainError, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import provenance
from memory.indexing import schedule_embedding
from memory.models import Clarification

logger = logging.getLogger(__name__)

ANSWERS = 4
"""Step 0 asks the PO four questions (section 2.2): exactly four answers make a version."""

STORY_PATTERN = r"[A-Z][A-Z0-9]{0,19}-\d{1,9}"
_STORY = re.compile(rf"^{STORY_PATTERN}$")
_CLARIFICATION_NAME = re.compile(
    rf"^(?P<story>{STORY_PATTERN})-clarifications"
    r"(?:-(?P<stamp>\d{4}-\d{2}-\d{2}-\d{6})(?:-v(?P<version>[1-9]\d*))?)?\.md$"
)
_STAMP = "%Y-%m-%d-%H%M%S"
_KEY_MAX = 100  # story, domain and project columns


class ClarificationWriteFailed(DomainError):
    """The database refused the write; nothing was stored. Step 0 goes on without it (ERR-295-09)."""


def clarification_name(
    story: str, version: int, at: dt.datetime, taken: frozenset[str] | set[str] = frozenset()
) -> str:
    """The seed's file names: ``PD-XXX-clarifications.md`` for the first version, then
    ``PD-XXX-clarifications-YYYY-MM-DD-HHMMSS.md`` (UTC). Two versions in the same second would
    share a name (the seed's files would overwrite each other); the later one gets ``-v{version}``."""
    if version == 1:
        return f"{story}-clarifications.md"
    name = f"{story}-clarifications-{at.astimezone(dt.UTC).strftime(_STAMP)}.md"
    if name in taken:
        name = name.removesuffix(".md") + f"-v{version}.md"
    return name


def parse_clarification_name(name: str) -> tuple[str, dt.datetime | None]:
    """``(story, timestamp or None)`` of a clarification file name; ValueError when it is not one
    (TC-NEG-04: D-295-15/16, e.g. a lower-case story, a missing suffix, an impossible timestamp)."""
    match = _CLARIFICATION_NAME.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a clarification file name ({{STORY}}-clarifications[-YYYY-MM-DD-HHMMSS].md)")
    stamp = match.group("stamp")
    if stamp is None:
        return match.group("story"), None
    try:
        at = dt.datetime.strptime(stamp, _STAMP).replace(tzinfo=dt.UTC)
    except ValueError:
        raise ValueError(f"{name!r} has an impossible timestamp {stamp!r}") from None
    return match.group("story"), at


def _error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": ["body", *loc], "msg": msg, "type": kind}


def _check_clarification(story: Any, domain: Any, project: Any, answers: Any) -> list[dict[str, Any]]:
    """Every problem with the input at once. Answers are checked, never changed."""
    errors: list[dict[str, Any]] = []
    if not isinstance(story, str) or not _STORY.match(story):
        errors.append(_error(["story"], "must be a story id such as PD-295 (upper-case key, dash, number)", "story"))
    for name, value in (("domain", domain), ("project", project)):
        if not isinstance(value, str) or not value.strip():
            errors.append(_error([name], "must be a non-empty string", "missing"))
        elif len(value.strip()) > _KEY_MAX:
            errors.append(_error([name], f"longer than {_KEY_MAX} characters", "too_long"))
        elif "\x00" in value or not _encodable(value) or not value.isprintable():
            errors.append(_error([name], "must be printable text", "printable"))
    if not isinstance(answers, list | tuple) or len(answers) != ANSWERS:
        count = len(answers) if isinstance(answers, list | tuple) else "not a list"
        errors.append(_error(["answers"], f"exactly {ANSWERS} answers are required (got {count})", "answers_count"))
        return errors
    for index, answer in enumerate(answers):
        if not isinstance(answer, str):
            errors.append(_error(["answers", index], "must be a string", "string_type"))
        elif not _encodable(answer):  # a lone surrogate from a JSON escape cannot be stored verbatim
            errors.append(_error(["answers", index], "is not valid Unicode text", "unicode"))
        elif not answer.strip():
            errors.append(_error(["answers", index], "must not be empty", "missing"))
        elif "\x00" in answer:  # PostgreSQL text cannot hold NUL; storing it altered would break verbatim
            errors.append(_error(["answers", index], "must not contain NUL characters", "nul"))
    return errors


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lock_story(story: str) -> None:
    """Versions of one story are numbered one call at a time; other stories do not wait."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('memory.clarification'), hashtext(%s))", [story])


def persist_clarifications(
    *,
    story: str,
    domain: str,
    project: str,
    answers: list[str],
    actor: Principal,
    now: dt.datetime | None = None,
    job: UUID | None = None,
    session: UUID | None = None,
) -> tuple[int, str]:
    """Store the four answers of ``story`` as its next version; returns ``(version, name)``.

    An agent writes them only into a domain its manifest lets it write into (else Forbidden,
    memory/provenance.py); each answer keeps its author and the job or session it names.

    Answers are stored byte for byte (no strip, no normalisation: TC-NOM-03); story, domain and
    project are identifiers and are stripped. Raises InvalidInput (every failing field) or
    ClarificationWriteFailed (logged as ``[clarifications] write failed: ...``); nothing is written
    in either case."""
    errors = _check_clarification(story, domain, project, answers)
    if errors:
        raise InvalidInput("The clarifications are invalid.", errors=errors)
    if now is not None and timezone.is_naive(now):
        raise ValueError("now must be timezone-aware")
    domain, project = domain.strip(), project.strip()
    provenance.check_domain_write(actor, domain, what="clarifications")
    origin = provenance.origin(actor, job=job, session=session)
    name = f"{story}-clarifications"
    try:
        # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
        with transaction.atomic():
            _lock_story(story)
            at = now or timezone.now()  # read under the lock: a later version is never dated earlier
            previous = Clarification.objects.filter(story=story)
            version = (previous.aggregate(top=Max("version"))["top"] or 0) + 1
            taken = set(previous.values_list("name", flat=True).distinct())
            name = clarification_name(story, version, at, taken)
            rows = Clarification.objects.bulk_create(
                Clarification(
                    story=story,
                    domain=domain,
                    project=project,
                    version=version,
                    name=name,
                    question_idx=index,
                    verbatim=answer,
                    date=at,
                    **origin,
                )
                for index, answer in enumerate(answers, start=1)
            )
            record(
                actor=actor,
                action=AuditAction.CLARIFICATIONS_PERSISTED,
                target=rows[0],
                story=story,
                version=version,
                name=name,
            )
            schedule_embedding("clarification", [row.pk for row in rows])
    except DatabaseError as exc:
        logger.error("[clarifications] write failed: %s: %s", name, exc)
        raise ClarificationWriteFailed(f"The clarifications of {story} could not be stored: {exc}") from exc
    return version, name


def clarification_versions(domain: str | None, project: str | None, *, all_versions: bool = False) -> QuerySet:
    """One row per stored version (its first answer), newest first (date, then version).

    Filters are exact (M-02: no similarity search here); ``None`` means any. By default only the
    newest version of each story within the filter is kept (H-06)."""
    heads = Clarification.objects.filter(question_idx=1)
    if domain is not None:
        heads = heads.filter(domain=domain)
    if project is not None:
        heads = heads.filter(project=project)
    if not all_versions:
        newer = heads.filter(story=OuterRef("story"), version__gt=OuterRef("version"))
        heads = heads.filter(~Exists(newer))
    return heads.order_by("-date", "-version", "story")


# `latest_clarifications(domain, project, limit)` as one statement (heads and answers together), for the
# injection block's single round trip (memory/block_query.py); tests/memory/test_injection.py checks that the
# two give the same block.
LATEST_SQL = """
    SELECT h.story, h.version, h.name, h.date,
           ARRAY(SELECT a.verbatim FROM memory_clarification a
                  WHERE a.story = h.story AND a.version = h.version ORDER BY a.question_idx) AS answers
      FROM memory_clarification h
     WHERE h.question_idx = 1 AND h.domain = %(c_domain)s AND h.project = %(c_project)s
       AND NOT EXISTS (SELECT 1 FROM memory_clarification n
                        WHERE n.question_idx = 1 AND n.domain = %(c_domain)s AND n.project = %(c_project)s
                          AND n.story = h.story AND n.version > h.version)
     ORDER BY h.date DESC, h.version DESC, h.story
     LIMIT %(c_limit)s
"""


def _with_answers(heads: list[Clarification]) -> list[dict[str, Any]]:
    if not heads:
        return []
    wanted = Q()
    for head in heads:
        wanted |= Q(story=head.story, version=head.version)
    answers: dict[tuple[str, int], list[str]] = {}
    for row in Clarification.objects.filter(wanted).order_by("story", "version", "question_idx"):
        answers.setdefault((row.story, row.version), []).append(row.verbatim)
    return [
        {
            "story": head.story,
            "domain": head.domain,
            "project": head.project,
            "version": head.version,
            "name": head.name,
            "date": head.date,
            "answers": answers[(head.story, head.version)],
        }
        for head in heads
    ]


def latest_clarifications(
    domain: str | None, project: str | None, limit: int = 3, *, offset: int = 0, all_versions: bool = False
) -> list[dict[str, Any]]:
    """The newest clarifications of a domain and project (step 0's third section, top 3 by default):
    ``[{story, domain, project, version, name, date, answers}]``."""
    if limit < 1 or offset < 0:
        raise ValueError("limit must be >= 1 and offset >= 0")
    heads = list(clarification_versions(domain, project, all_versions=all_versions)[offset : offset + limit])
    return _with_answers(heads)


def render_clarifications_markdown(
    *, story: str, domain: str, project: str, version: int, name: str, date: dt.datetime, answers: list[str]
) -> str:
    """The seed's clarification file: YAML front matter, then each answer under ``## Qi.`` (section 7)
    in a fenced block longer than any backtick run of the answer, so that no answer can close it or
    fake a heading, and reading the file back gives every answer byte for byte."""
    front = {
        "story": story,
        "domain": domain,
        "project": project,
        "version": version,
        "name": name,
        "date": date.isoformat(),
        "answers_sha256": [_sha256(answer) for answer in answers],
    }
    parts = [
        "---\n",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=False),
        "---\n\n",
        f"# {story} — Clarifications PO (version {version})\n",
    ]
    for index, answer in enumerate(answers, start=1):
        fence = "`" * max(3, _longest_backtick_run(answer) + 1)
        parts.append(f"\n## Q{index}.\n\n{fence}text\n{answer}\n{fence}\n")
    return "".join(parts)


def read_clarifications_markdown(text: str) -> dict[str, Any]:
    """The inverse of render_clarifications_markdown: the front matter fields plus ``answers``.

    Blocks are read in order, each up to the first line holding only its own fence, which no
    answer can contain (the fence is longer than any backtick run of the answer)."""
    if not text.startswith("---\n"):
        raise ValueError("no front matter")
    end = text.index("\n---\n", 3)
    data = yaml.safe_load(text[4 : end + 1])
    answers: list[str] = []
    position = end
    for index in range(1, ANSWERS + 1):
        heading = f"\n## Q{index}.\n\n"
        position = text.index(heading, position) + len(heading)
        opening = text.index("text\n", position)
        fence = text[position:opening]
        if len(fence) < 3 or set(fence) != {"`"}:
            raise ValueError(f"Q{index}: no fenced block")
        start = opening + len("text\n")
        close = text.index(f"\n{fence}\n", start - 1)  # start - 1: an empty answer closes at once
        answers.append(text[start : max(close, start)])
        position = close + 1
    data["answers"] = answers
    return data


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def export_clarifications_markdown(story: str, version: int | None = None) -> str:
    """One version of a story's clarifications (the newest by default) as the seed's Markdown file."""
    rows = Clarification.objects.filter(story=story)
    if version is None:
        version = rows.aggregate(top=Max("version"))["top"]
    answers = list(rows.filter(version=version).order_by("question_idx")) if version is not None else []
    if not answers:
        which = f"version {version} of " if version is not None else ""
        raise NotFound(f"No clarifications for {which}{story}.")
    head = answers[0]
    return render_clarifications_markdown(
        story=head.story,
        domain=head.domain,
        project=head.project,
        version=head.version,
        name=head.name,
        date=head.date,
        answers=[row.verbatim for row in answers],
    )
