"""Import and export of the seed's learnings files (memory/transfer.py).

Named after seed 004's test ids where one applies: TC-NOM-08 (the scope migration is idempotent,
with the scope_migrated_at sentinel), TC-ERR-01 (invalid lines rejected with a reason, the valid
ones go on), TC-ERR-03 (a missing injections file is an empty corpus with a note), TC-PLAN-01 /
INV-plan-03 (one canonicalisation of tags for every producer, the importer included).
"""

from __future__ import annotations

import json
import time
import unicodedata
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory import lifecycle, transfer
from memory.models import Learning, LearningInjection
from memory.tags import compute_tags_hash

pytestmark = pytest.mark.django_db


def entry(text: str = "retry flaky deploys once", **overrides: Any) -> dict[str, Any]:
    """A learnings.jsonl entry as the seed's producers wrote it (no scope: before the migration)."""
    tags = overrides.pop("tags", ["#deploy", "#ci"])
    values = {
        "story": "PD-1",
        "gate": 3,
        "domain": "tooling",
        "project": "gov",
        "tags": tags,
        "text": text,
        "tags_hash": compute_tags_hash(tags) if isinstance(tags, list) else None,
        "date_created": "2026-01-05",
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not None}


def jsonl(*items: dict[str, Any] | str) -> list[str]:
    """Lines of a file: dicts are dumped, strings are taken as raw lines (to write broken ones)."""
    return [(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)) + "\n" for item in items]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def import_lines(lines: list[str], **kwargs: Any) -> tuple[transfer.ImportReport, list[str]]:
    messages: list[str] = []
    report = transfer.import_learnings(lines, source="learnings.jsonl", actor=SYSTEM, warn=messages.append, **kwargs)
    return report, messages


LEARNING_FIELDS = (
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
    "archived_at",
)
INJECTION_FIELDS = (
    "learning__story",
    "learning__gate",
    "learning__tags_hash",
    "learning__text",
    "story",
    "domain",
    "project",
    "at",
)


def rows() -> list[tuple]:
    """Every learning and injection by the seed's fields (ids and bookkeeping columns left out)."""
    learnings = [(*row[:4], tuple(row[4]), *row[5:]) for row in Learning.objects.values_list(*LEARNING_FIELDS)]
    injections = list(LearningInjection.objects.values_list(*INJECTION_FIELDS))
    return sorted(learnings, key=repr) + sorted(injections, key=repr)


def test_tc_nom_08_importing_twice_adds_nothing_sets_the_sentinel_and_keeps_scopes():
    given_sentinel = "2026-02-01T08:00:00+00:00"
    lines = jsonl(
        entry("no scope yet"),
        entry("already promoted", scope="domain", scope_migrated_at=given_sentinel),
        entry("global, no sentinel", scope="global"),
    )

    first, _ = import_lines(lines)
    second, _ = import_lines(lines)

    assert (first.created, first.skipped, first.migrated) == (3, 0, 1)
    assert (second.created, second.skipped, second.migrated) == (0, 3, 0)
    assert Learning.objects.count() == 3
    scopes = dict(Learning.objects.values_list("text", "scope"))
    assert scopes == {"no scope yet": "story", "already promoted": "domain", "global, no sentinel": "global"}
    assert not Learning.objects.filter(scope_migrated_at__isnull=True).exists()
    promoted = Learning.objects.get(text="already promoted")
    assert promoted.scope_migrated_at == datetime(2026, 2, 1, 8, tzinfo=UTC)
    assert lifecycle.migrate_scopes().migrated == 0  # the import was the migration


def test_duplicate_lines_inside_one_file_are_imported_once():
    report, _ = import_lines(jsonl(entry(), entry(), entry(tags=["#CI", "deploy"])))
    assert (report.created, report.skipped) == (1, 2)  # the same tags in another spelling are the same key


def test_same_key_with_another_text_is_another_learning():
    report, _ = import_lines(jsonl(entry("first lesson"), entry("second lesson")))
    assert report.created == 2


def test_tc_err_01_invalid_lines_are_rejected_with_their_number_and_the_valid_ones_go_on():
    lines = jsonl(
        entry("good one"),  # 1
        "{not json",  # 2
        entry(text=None),  # 3: missing field
        entry(gate="3"),  # 4: wrong type
        "",  # 5: blank, ignored
        entry(gate=True),  # 6: a bool is not a gate
        entry(tags="#deploy"),  # 7: tags must be a list
        "[1, 2]",  # 8: not an object
        entry(scope="forever"),  # 9: unknown scope
        entry(date_created="yesterday"),  # 10
        entry(story="x" * 101),  # 11
        entry("NUL \x00 inside"),  # 12
        entry("good two"),  # 13
    )

    report, messages = import_lines(lines)

    assert report.created == 2
    assert sorted(Learning.objects.values_list("text", flat=True)) == ["good one", "good two"]
    assert [number for number, _ in report.rejected] == [2, 3, 4, 6, 7, 8, 9, 10, 11, 12]
    assert report.lines == 12
    rejected = [m for m in messages if m.startswith("[import] rejected: ")]
    assert rejected[0].startswith("[import] rejected: line 2: invalid JSON")
    assert "[import] rejected: line 3: missing field(s): text" in rejected
    assert "[import] rejected: line 4: field 'gate' must be an integer, got str" in rejected
    assert "[import] rejected: line 7: field 'tags' must be a list of strings" in rejected
    assert "[import] rejected: line 12: field 'text' contains a NUL character" in rejected
    assert len(rejected) == 10


def test_tc_err_01_an_undecodable_line_is_rejected_alone(tmp_path):
    path = tmp_path / "learnings.jsonl"
    good = json.dumps(entry("still imported")).encode()
    path.write_bytes(good + b"\n" + b'{"story": "\xff\xfe"}\n' + json.dumps(entry("after it")).encode() + b"\n")
    messages: list[str] = []

    reports = transfer.import_files(path, actor=SYSTEM, warn=messages.append)

    assert reports[0].created == 2
    assert messages == ["[import] rejected: line 2: not valid UTF-8"]


def test_tc_plan_01_tags_are_canonicalised_and_a_different_hash_is_corrected():
    nfd = unicodedata.normalize("NFD", "Déploiement")
    tags = ["Python", " #python", nfd, "CI"]
    report, messages = import_lines(jsonl(entry(tags=tags, tags_hash="0" * 64), entry("right hash", tags=tags)))

    assert (report.created, report.corrected) == (2, 1)
    for learning in Learning.objects.all():
        assert learning.tags == ["#ci", "#déploiement", "#python"]
        assert learning.tags_hash == compute_tags_hash(tags)
    assert messages == [f"[import] corrected: line 1: tags_hash {'0' * 16} -> {compute_tags_hash(tags)[:16]}"]
    assert report.hash_corrections == {("PD-1", 3, "0" * 64): compute_tags_hash(tags)}


def test_the_archive_imports_as_archived_with_archived_at():
    lines = jsonl(entry("evicted", scope="story", archived_at="2026-03-01T00:00:00Z"), entry("evicted, no date"))
    report, _ = import_lines(lines, archive=True)

    assert (report.kind, report.created, report.migrated) == ("archive", 2, 0)
    assert set(Learning.objects.values_list("scope", flat=True)) == {"archived"}
    assert Learning.objects.get(text="evicted").archived_at == datetime(2026, 3, 1, tzinfo=UTC)
    assert Learning.objects.get(text="evicted, no date").archived_at is not None


def injection(text: str | None, **overrides: Any) -> dict[str, Any]:
    values = {
        "story": "PD-1",
        "gate": 3,
        "tags_hash": compute_tags_hash(["#deploy", "#ci"]),
        "text": text,
        "injected_into": "PD-9",
        "domain": "tooling",
        "project": "gov",
        "injected_at": "2026-04-01T10:00:00+00:00",
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not None}


def test_injections_are_matched_by_key_and_text_or_by_the_key_alone_when_unique(tmp_path):
    import_lines(
        jsonl(entry("twin one"), entry("twin two"), entry("alone", story="PD-2", tags=["#Solo"], tags_hash="f" * 64))
    )
    learnings = tmp_path / "learnings.jsonl"
    write(learnings, [])
    injections = write(
        tmp_path / "learnings-injections.jsonl",
        jsonl(
            injection("twin two"),  # 1: exact text among two learnings of one key
            injection(None),  # 2: no text, key shared by two: ambiguous
            injection(None, story="PD-2", tags_hash=compute_tags_hash(["#solo"])),  # 3: unique key
            injection(None, story="PD-404"),  # 4: no such learning
            injection("twin one", injected_at="2026-04-02"),  # 5: a date alone is midnight UTC
            injection("twin two", injected_into=None),  # 6: missing field
        ),
    )
    messages: list[str] = []

    reports = transfer.import_files(learnings, injections=injections, actor=SYSTEM, warn=messages.append)
    again = transfer.import_files(learnings, injections=injections, actor=SYSTEM, warn=lambda m: None)

    report = reports[-1]
    assert (report.kind, report.created, report.skipped) == ("injections", 3, 0)
    assert [number for number, _ in report.rejected] == [6, 2, 4]
    ambiguous = "2 learnings share this (story, gate, tags_hash) and no text matches one of them"
    assert f"[import] rejected: line 2: {ambiguous}" in messages
    assert "[import] rejected: line 4: no learning with this (story, gate, tags_hash)" in messages
    served = dict(LearningInjection.objects.values_list("learning__text", "at"))
    assert served == {
        "twin two": datetime(2026, 4, 1, 10, tzinfo=UTC),
        "alone": datetime(2026, 4, 1, 10, tzinfo=UTC),
        "twin one": datetime(2026, 4, 2, tzinfo=UTC),
    }
    assert (again[-1].created, again[-1].skipped) == (0, 3)
    assert LearningInjection.objects.count() == 3


def test_injections_written_with_the_old_hash_find_the_corrected_learning(tmp_path):
    old = "a" * 64
    learnings = write(tmp_path / "learnings.jsonl", jsonl(entry("old producer", tags_hash=old)))
    injections = write(tmp_path / "learnings-injections.jsonl", jsonl(injection(None, tags_hash=old)))

    reports = transfer.import_files(learnings, injections=injections, actor=SYSTEM, warn=lambda m: None)

    assert [(r.created, r.corrected) for r in reports] == [(1, 1), (1, 1)]
    assert LearningInjection.objects.get().learning.text == "old producer"


def test_an_old_hash_corrected_two_ways_matches_nothing(tmp_path):
    """A placeholder hash shared by learnings with different tags must not pick one of them."""
    learnings = write(
        tmp_path / "learnings.jsonl",
        jsonl(
            entry("first", tags=["#a"], tags_hash="bad"),
            entry("second", tags=["#b"], tags_hash="bad"),
        ),
    )
    injections = write(tmp_path / "learnings-injections.jsonl", jsonl(injection(None, tags_hash="bad")))
    messages: list[str] = []

    reports = transfer.import_files(learnings, injections=injections, actor=SYSTEM, warn=messages.append)

    assert (reports[-1].created, len(reports[-1].rejected)) == (0, 1)
    assert messages[-1] == (
        "[import] rejected: line 1: tags_hash bad was corrected to several hashes for this story and gate; "
        "give the tags"
    )


def test_tc_err_03_a_missing_injections_file_is_an_empty_corpus_with_a_note(tmp_path):
    learnings = write(tmp_path / "learnings.jsonl", jsonl(entry()))
    missing = tmp_path / "learnings-injections.jsonl"
    messages: list[str] = []

    reports = transfer.import_files(learnings, injections=missing, actor=SYSTEM, warn=messages.append)

    assert [(r.kind, r.created, r.missing) for r in reports] == [("learnings", 1, False), ("injections", 0, True)]
    assert messages == [f"[import] injections corpus empty: {missing} not found"]


def test_a_missing_learnings_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        transfer.import_files(tmp_path / "nope.jsonl", actor=SYSTEM)


def test_round_trip_import_export_import_gives_the_same_rows(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    write(
        source / transfer.LEARNINGS_FILE,
        jsonl(
            entry("no scope"),
            entry("domain one", scope="domain", date=None, date_created=None, extra_field="ignored"),
            entry("older entry", story="PD-2", date="2025-11-30", date_created=None, tags=["Ünïcode", "ops"]),
        ),
    )
    write(source / transfer.ARCHIVE_FILE, jsonl(entry("evicted", story="PD-3", archived_at="2026-03-01T00:00:00Z")))
    write(
        source / transfer.INJECTIONS_FILE,
        jsonl(injection("no scope"), injection("domain one", domain="web", project=None)),
    )
    files = {"archive": source / transfer.ARCHIVE_FILE, "injections": source / transfer.INJECTIONS_FILE}
    transfer.import_files(source / transfer.LEARNINGS_FILE, actor=SYSTEM, **files)
    before = rows()

    first = transfer.export_learnings(tmp_path / "out1")
    LearningInjection.objects.all().delete()
    Learning.objects.all().delete()
    out1 = tmp_path / "out1"
    transfer.import_files(
        out1 / transfer.LEARNINGS_FILE,
        archive=out1 / transfer.ARCHIVE_FILE,
        injections=out1 / transfer.INJECTIONS_FILE,
        actor=SYSTEM,
    )
    after = rows()
    transfer.export_learnings(tmp_path / "out2")

    assert (first.learnings, first.archived, first.injections) == (3, 1, 2)
    assert LearningInjection.objects.filter(project="").count() == 1
    assert after == before
    for name in (transfer.LEARNINGS_FILE, transfer.ARCHIVE_FILE, transfer.INJECTIONS_FILE):
        assert (tmp_path / "out1" / name).read_text() == (tmp_path / "out2" / name).read_text()


def test_export_writes_the_seed_formats_with_iso_dates(tmp_path):
    import_lines(jsonl(entry("live", date="2025-12-31"), entry("gone", scope="archived")))

    transfer.export_learnings(tmp_path)

    live = [json.loads(line) for line in (tmp_path / transfer.LEARNINGS_FILE).read_text().splitlines()]
    archived = [json.loads(line) for line in (tmp_path / transfer.ARCHIVE_FILE).read_text().splitlines()]
    assert [item["text"] for item in live] == ["live"]
    assert live[0]["date_created"] == "2026-01-05"
    assert live[0]["date"] == "2025-12-31"
    assert datetime.fromisoformat(live[0]["scope_migrated_at"]).tzinfo is not None
    assert set(live[0]) == {
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
    }
    assert [(item["text"], item["scope"]) for item in archived] == [("gone", "archived")]
    assert datetime.fromisoformat(archived[0]["archived_at"]).date() <= date.today()
    assert (tmp_path / transfer.INJECTIONS_FILE).read_text() == ""
    assert not list(tmp_path.glob(".*.tmp"))


def test_embeddings_are_scheduled_in_batches_after_commit(monkeypatch, django_capture_on_commit_callbacks):
    from controlplane.celery import app

    sent: list[list] = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, **kw: sent.append([name, *args]))
    monkeypatch.setattr(transfer, "EMBED_BATCH", 2)
    with django_capture_on_commit_callbacks(execute=True):
        import_lines(jsonl(*(entry(f"lesson {n}") for n in range(5))))

    ids = sorted(Learning.objects.values_list("pk", flat=True))
    assert [name for name, *_ in sent] == ["memory.embed"] * 3
    assert [kind for _, kind, _ in sent] == ["learning"] * 3
    assert sorted(pk for *_, pks in sent for pk in pks) == ids


def test_each_file_import_is_audited_once():
    import_lines(jsonl(entry("a"), entry("b"), "{bad"))
    event = AuditEvent.objects.get(action="memory.learnings_imported")
    assert (event.target_type, event.target_id, event.data["created"], event.data["rejected"]) == (
        "memory.imported_file",
        "learnings.jsonl",
        2,
        1,
    )


def test_progress_is_reported_on_large_inputs(monkeypatch):
    monkeypatch.setattr(transfer, "PROGRESS_EVERY", 2)
    seen: list[int] = []
    import_lines(jsonl(*(entry(f"lesson {n}") for n in range(5))), progress=seen.append)
    assert seen == [2, 4, 5]


def test_a_20k_line_import_finishes(capsys):
    lines = jsonl(
        *(
            entry(
                f"lesson {n}: keep deploys small",
                story=f"PD-{n % 500}",
                gate=n % 9,
                tags=[f"t{n % 37}", "ops"],
                scope=None if n % 3 else "domain",
            )
            for n in range(20_000)
        )
    )

    started = time.perf_counter()
    report, _ = import_lines(lines)
    seconds = time.perf_counter() - started

    assert (report.created, report.rejected) == (20_000, [])
    assert Learning.objects.count() == 20_000
    with capsys.disabled():
        print(f"\n[import] 20000 lines in {seconds:.2f} s ({20_000 / seconds:.0f} lines/s)")
