"""Watch notes (seed 004 section 2.1, flow B1): parsing, directory indexing, the command and the API.

Named after the seed's test ids: TC-NOM-01 (a scan indexes the valid notes and warns about the
others), TC-NOM-02 (a valid note gives a complete record), TC-NEG-01 (each invalid value is refused),
TC-ERR-01 (invalid data: rejected with a message, the rest goes on), TC-ERR-02 (incomplete front
matter: the note is skipped, the scan goes on).
"""

from __future__ import annotations

import datetime as dt
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory import watch_notes
from memory.models import Embedding, VeilleNote
from memory.veille import NoteError, parse_note
from tests.factories.memory import EmbeddingFactory
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load_granting

pytestmark = pytest.mark.django_db


@pytest.fixture
def notes_api(client):
    """agent.seo.vlevel whose manifest grants fleet-wide watch notes (memory.shared.watch_notes)."""
    return Api(client, issue_key(agent=load_granting("agent.seo.vlevel", watch_notes=True)))


def note(
    title: str | None = "LLM pricing drops",
    date: str | None = "2025-06-01",
    verdict: str | None = "signal",
    impact: str | None = "fort",
    tags: str | None = "[llm, pricing]",
    body: str = "Intro line.\n\n## Résumé\n\nPrices fell by half.\nFor every vendor.\n\nSecond paragraph.\n",
) -> str:
    """A note's text; a field given as None is left out of the front matter."""
    fields = {"title": title, "date": date, "verdict_veille": verdict, "impact_pv": impact, "tags": tags}
    front = "".join(f"{name}: {value}\n" for name, value in fields.items() if value is not None)
    return f"---\n{front}---\n{body}"


def write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def sent(monkeypatch) -> list[list]:
    """Embedding tasks sent to the broker (the real schedule_embedding, a recording broker)."""
    from controlplane.celery import app

    calls: list[list] = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, **kw: calls.append([name, *args]))
    return calls


# --- parsing (pure) ------------------------------------------------------------------------------


def test_tc_nom_02_a_valid_note_gives_every_field():
    record = parse_note(note(), "veille/a.md")

    assert record == {
        "path": "veille/a.md",
        "title": "LLM pricing drops",
        "date": dt.date(2025, 6, 1),
        "verdict_veille": "signal",
        "impact_pv": "fort",
        "summary": "Prices fell by half.\nFor every vendor.",
        "tags": ["llm", "pricing"],
    }


@pytest.mark.parametrize("verdict", ["signal", "bruit", "veille"])
@pytest.mark.parametrize("impact", ["fort", "modere", "faible", "aucun"])
def test_tc_nom_02_every_enum_value_is_accepted(verdict, impact):
    record = parse_note(note(verdict=verdict, impact=impact), "a.md")
    assert (record["verdict_veille"], record["impact_pv"]) == (verdict, impact)


def test_tc_nom_02_the_h1_is_the_title_when_the_front_matter_has_none():
    record = parse_note(note(title=None, body="\n# Agents à mémoire #\n\nText.\n"), "a.md")
    assert record["title"] == "Agents à mémoire"


def test_tc_nom_02_the_summary_falls_back_to_the_first_400_characters():
    body = "\n" + "word " * 200
    record = parse_note(note(body=body), "a.md")
    assert record["summary"] == body.strip()[:400]
    assert len(record["summary"]) == 400


def test_tc_nom_02_an_empty_resume_section_falls_back_too():
    record = parse_note(note(body="Short body.\n\n## Résumé\n\n## Détails\n\nx\n"), "a.md")
    assert record["summary"].startswith("Short body.")


def test_tc_nom_02_resume_heading_variants_are_recognised():
    for heading in ("## Resume", "## RÉSUMÉ :", "## Re\u0301sume\u0301"):  # last one: decomposed accents
        record = parse_note(note(body=f"Intro.\n\n{heading}\n\nThe gist.\n"), "a.md")
        assert record["summary"] == "The gist.", heading


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-06-01", dt.date(2025, 6, 1)),
        ("'2025-06-01'", dt.date(2025, 6, 1)),
        ("2025-06-01 10:30:00", dt.date(2025, 6, 1)),
    ],
)
def test_tc_nom_02_dates_as_yaml_dates_timestamps_or_iso_strings(value, expected):
    assert parse_note(note(date=value), "a.md")["date"] == expected


def test_tc_nom_02_tags_are_optional_strings_deduplicated():
    assert parse_note(note(tags=None), "a.md")["tags"] == []
    assert parse_note(note(tags="solo"), "a.md")["tags"] == ["solo"]
    assert parse_note(note(tags="[a, ' b ', a, 2025]"), "a.md")["tags"] == ["a", "b", "2025"]


def test_tc_nom_02_a_byte_order_mark_does_not_hide_the_front_matter():
    assert parse_note("\ufeff" + note(), "a.md")["title"] == "LLM pricing drops"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (note(verdict=None), "verdict_veille"),
        (note(verdict="Signal"), "verdict_veille"),
        (note(verdict="important"), "verdict_veille"),
        (note(impact="modéré"), "impact_pv"),
        (note(impact="FORT"), "impact_pv"),
        (note(impact="élevé"), "impact_pv"),
        (note(impact=None), "impact_pv"),
        (note(impact="[fort]"), "impact_pv"),
        (note(date=None), "date"),
        (note(date="'01/06/2025'"), "date"),
        (note(date="'2025-13-01'"), "date"),
        (note(date="'2025-06'"), "date"),
        (note(title=None, body="No heading here.\n"), "title"),
        (note(title="'   '", body="No heading either.\n"), "title"),
        (note(title="[a, b]"), "title"),
        (note(title="x" * 257), "title"),
        (note(tags="{a: 1}"), "tags"),
        (note(tags="[[nested]]"), "tags"),
        ("# Just Markdown\n\nNo front matter at all.\n", "front_matter"),
        ("---\ntitle: unterminated\n", "front_matter"),
        ("---\ntitle: [unclosed\n---\nbody\n", "front_matter"),
        ("---\n- a list\n- not a mapping\n---\nbody\n", "front_matter"),
        ("---\ndate: 2025-13-45\n---\nbody\n", "front_matter"),
        (note() + "\x00", "content"),
    ],
)
def test_tc_neg_01_invalid_values_are_refused_naming_the_field(text, field):
    with pytest.raises(NoteError) as caught:
        parse_note(text, "a.md")
    assert caught.value.field == field


def test_tc_neg_01_every_failing_field_is_reported_at_once():
    with pytest.raises(NoteError) as caught:
        parse_note(note(date=None, verdict="maybe", impact=None), "a.md")
    assert [name for name, _ in caught.value.errors] == ["date", "verdict_veille", "impact_pv"]
    assert "maybe" in str(caught.value)


# --- directory indexing --------------------------------------------------------------------------


@pytest.fixture
def veille_dir(tmp_path) -> Path:
    """Three valid notes (one nested two levels down) and two invalid ones (TC-NOM-01's corpus)."""
    root = tmp_path / "veille"
    write(root, "2025-06-llm-pricing.md", note())
    write(root, "agents/memory.md", note(title="Agent memory", impact="modere", verdict="veille"))
    write(root, "agents/deep/nested.md", note(title="Nested", impact="aucun", verdict="bruit", tags=None))
    write(root, "no-verdict.md", note(title="No verdict", verdict=None))
    write(root, "agents/bad-impact.md", note(title="Bad impact", impact="huge"))
    write(root, "README.txt", "not a note")
    return root


def test_tc_nom_01_valid_notes_are_indexed_and_invalid_ones_warned_about(
    veille_dir, sent, django_capture_on_commit_callbacks
):
    warnings: list[str] = []

    with django_capture_on_commit_callbacks(execute=True):
        report = watch_notes.index_veille(veille_dir, actor=SYSTEM, warn=warnings.append)

    root = veille_dir.resolve()
    assert report.as_dict() == {
        "directory": str(root),
        "indexed": 3,
        "updated": 0,
        "unchanged": 0,
        "removed": 0,
        "skipped": 2,
    }
    assert sorted(VeilleNote.objects.values_list("path", flat=True)) == sorted(
        str(root / p) for p in ("2025-06-llm-pricing.md", "agents/memory.md", "agents/deep/nested.md")
    )
    assert len(warnings) == 2
    assert warnings[0].startswith(f"[veille] {root / 'agents/bad-impact.md'} skipped: impact_pv: 'huge' is not one")
    assert warnings[1].startswith(f"[veille] {root / 'no-verdict.md'} skipped: verdict_veille: missing")
    nested = VeilleNote.objects.get(title="Nested")
    assert (nested.verdict_veille, nested.impact_pv, nested.tags) == ("bruit", "aucun", [])
    ids = sorted(VeilleNote.objects.values_list("pk", flat=True))
    assert [[name, kind, sorted(pks)] for name, kind, pks in sent] == [["memory.embed", "veille", ids]]
    assert AuditEvent.objects.filter(action="veille.indexed").count() == 3


def test_tc_err_01_invalid_notes_are_logged_by_default_and_the_run_goes_on(veille_dir, caplog):
    report = watch_notes.index_veille(veille_dir, actor=SYSTEM)

    assert report.indexed == 3
    messages = [r.getMessage() for r in caplog.records if r.name == "memory.watch_notes"]
    assert len(messages) == 2
    assert all(m.startswith("[veille] ") and " skipped: " in m for m in messages)


def test_tc_err_02_no_front_matter_or_unreadable_files_are_skipped_and_the_scan_goes_on(tmp_path):
    write(tmp_path, "a-valid.md", note())
    write(tmp_path, "b-plain.md", "# Only Markdown\n\nNo YAML here.\n")
    write(tmp_path, "c-latin1.md", note(title="Café").encode("latin-1"))
    write(tmp_path, "d-broken-yaml.md", "---\ntitle: [oops\n---\n")
    write(tmp_path, "e-valid.md", note(title="Second valid"))
    warnings: list[str] = []

    report = watch_notes.index_veille(tmp_path, actor=SYSTEM, warn=warnings.append)

    assert (report.indexed, len(report.skipped)) == (2, 3)
    assert [Path(path).name for path, _ in report.skipped] == ["b-plain.md", "c-latin1.md", "d-broken-yaml.md"]
    assert "front_matter: missing YAML front matter" in warnings[0]
    assert "cannot read: UnicodeDecodeError" in warnings[1]
    assert "front_matter: invalid YAML" in warnings[2]
    assert set(VeilleNote.objects.values_list("title", flat=True)) == {"LLM pricing drops", "Second valid"}


def test_hidden_folders_are_not_scanned(tmp_path):
    write(tmp_path, "kept.md", note())
    write(tmp_path, ".obsidian/templates/template.md", note(title="Template"))
    write(tmp_path, "sub/.draft.md", note(title="Draft"))

    assert watch_notes.index_veille(tmp_path, actor=SYSTEM).indexed == 1


def test_reindexing_updates_changed_files_and_removes_vanished_or_invalid_ones(
    veille_dir, sent, django_capture_on_commit_callbacks
):
    watch_notes.index_veille(veille_dir, actor=SYSTEM, warn=lambda _: None)
    root = veille_dir.resolve()
    pricing = VeilleNote.objects.get(path=str(root / "2025-06-llm-pricing.md"))
    memory = VeilleNote.objects.get(path=str(root / "agents/memory.md"))
    EmbeddingFactory(kind="veille", object_id=memory.pk)

    write(veille_dir, "2025-06-llm-pricing.md", note(impact="faible"))  # changed
    (veille_dir / "agents/memory.md").unlink()  # vanished
    write(veille_dir, "agents/deep/nested.md", note(verdict="maybe"))  # now invalid
    write(veille_dir, "new/fresh.md", note(title="Fresh"))  # new
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        report = watch_notes.index_veille(veille_dir, actor=SYSTEM, warn=lambda _: None)

    assert (report.indexed, report.updated, report.unchanged, report.removed, len(report.skipped)) == (1, 1, 0, 2, 3)
    pricing.refresh_from_db()
    assert pricing.impact_pv == "faible"
    assert set(VeilleNote.objects.values_list("title", flat=True)) == {"LLM pricing drops", "Fresh"}
    assert not Embedding.objects.filter(kind="veille", object_id=memory.pk).exists()
    removed = AuditEvent.objects.filter(action="veille.removed")
    assert sorted(e.data["reason"].split(":")[0] for e in removed) == ["file removed", "invalid"]
    assert AuditEvent.objects.filter(action="veille.updated", target_id=str(pricing.pk)).count() == 1
    fresh = VeilleNote.objects.get(title="Fresh")
    assert [sorted(call[2]) for call in sent] == [sorted([fresh.pk, pricing.pk])]


def test_an_unchanged_directory_changes_nothing(veille_dir, sent, django_capture_on_commit_callbacks):
    watch_notes.index_veille(veille_dir, actor=SYSTEM, warn=lambda _: None)
    audits = AuditEvent.objects.count()
    sent.clear()

    with django_capture_on_commit_callbacks(execute=True):
        report = watch_notes.index_veille(veille_dir, actor=SYSTEM, warn=lambda _: None)

    assert (report.indexed, report.updated, report.unchanged, report.removed) == (0, 0, 3, 0)
    assert AuditEvent.objects.count() == audits
    assert sent == []


def test_indexing_a_directory_leaves_other_directories_and_api_notes_alone(tmp_path):
    write(tmp_path, "one/a.md", note(title="In one"))
    write(tmp_path, "two/b.md", note(title="In two"))
    watch_notes.index_veille(tmp_path / "one", actor=SYSTEM)
    watch_notes.index_veille(tmp_path / "two", actor=SYSTEM)
    watch_notes.add_note(note(title="Posted"), "one/a.md", actor=SYSTEM)
    (tmp_path / "one/a.md").unlink()

    report = watch_notes.index_veille(tmp_path / "one", actor=SYSTEM)

    assert report.removed == 1
    assert set(VeilleNote.objects.values_list("title", flat=True)) == {"In two", "Posted"}


def test_a_missing_directory_is_an_error_and_removes_nothing(tmp_path):
    write(tmp_path, "a.md", note())
    watch_notes.index_veille(tmp_path, actor=SYSTEM)

    with pytest.raises(NotADirectoryError):
        watch_notes.index_veille(tmp_path / "typo", actor=SYSTEM)
    assert VeilleNote.objects.count() == 1


def test_the_command_prints_counts_and_warnings(veille_dir):
    out, err = StringIO(), StringIO()

    call_command("index_veille", str(veille_dir), stdout=out, stderr=err)

    assert out.getvalue().strip() == (
        f"[veille] {veille_dir.resolve()}: indexed 3, updated 0, unchanged 0, skipped 2, removed 0"
    )
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith("[veille] ") and " skipped: " in line for line in lines)


def test_the_command_refuses_a_missing_directory(tmp_path):
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("index_veille", str(tmp_path / "nope"))


# --- POST /api/v1/memory/veille ------------------------------------------------------------------


def test_tc_nom_02_an_agent_posts_a_markdown_note(notes_api, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = notes_api.post("/memory/veille?name=2025/pricing.md", raw=note(), content_type="text/markdown")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "2025/pricing.md"
    assert (body["title"], body["date"], body["verdict_veille"], body["impact_pv"]) == (
        "LLM pricing drops",
        "2025-06-01",
        "signal",
        "fort",
    )
    assert body["tags"] == ["llm", "pricing"]
    saved = VeilleNote.objects.get(path="2025/pricing.md")
    assert sent == [["memory.embed", "veille", [saved.pk]]]
    event = AuditEvent.objects.get(action="veille.indexed")
    assert event.actor == "agent:agent.seo.vlevel"


def test_posting_the_same_name_again_replaces_the_note(notes_api):
    first = notes_api.post("/memory/veille", {"name": "n.md", "content": note()})
    again = notes_api.post("/memory/veille", {"name": "n.md", "content": note(impact="aucun")})

    assert (first.status_code, again.status_code) == (201, 200)
    assert VeilleNote.objects.get().impact_pv == "aucun"


def test_a_note_without_a_name_is_named_after_its_date_and_title(notes_api):
    response = notes_api.post("/memory/veille", raw=note(), content_type="text/markdown")

    assert response.status_code == 201
    assert response.json()["name"] == "api/2025-06-01-llm-pricing-drops.md"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (note(verdict=None), "verdict_veille"),
        (note(impact="modéré"), "impact_pv"),
        (note(date="'June'"), "date"),
        (note(title=None, body="no title\n"), "title"),
        ("no front matter\n", "front_matter"),
    ],
)
def test_tc_neg_01_an_invalid_note_is_422_with_the_field_and_nothing_is_written(agent_api, text, field):
    response = agent_api.post("/memory/veille", raw=text, content_type="text/markdown")

    assert response.status_code == 422
    assert response["Content-Type"].startswith("application/problem+json")
    assert ["body", field] in [error["loc"] for error in response.json()["errors"]]
    assert not VeilleNote.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="veille.").exists()


def test_tc_neg_01_json_posts_report_every_failing_field(agent_api):
    response = agent_api.post("/memory/veille", {"name": "x.md", "content": note(verdict="x", impact=None)})

    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["errors"]] == [["body", "verdict_veille"], ["body", "impact_pv"]]


@pytest.mark.parametrize(
    ("kwargs", "loc"),
    [
        ({"body": {"name": "x.md"}}, ["body", "content"]),
        ({"body": ["not", "an", "object"]}, ["body"]),
        ({"body": {"name": 3, "content": note()}}, ["body", "name"]),
        ({"body": {"name": "../escape.md", "content": note()}}, ["body", "name"]),
        ({"body": {"name": "/abs/path.md", "content": note()}}, ["body", "name"]),
        ({"raw": "{not json", "content_type": "application/json"}, ["body"]),
        ({"raw": note().encode("latin-1", "replace") + b"\xe9", "content_type": "text/markdown"}, ["body"]),
    ],
)
def test_malformed_veille_bodies_are_422(agent_api, kwargs, loc):
    body = kwargs.pop("body", None)
    response = agent_api.post("/memory/veille", body, **kwargs)

    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["loc"] == loc
    assert not VeilleNote.objects.exists()


def test_a_bad_name_in_the_query_is_reported_there(agent_api):
    response = agent_api.post("/memory/veille?name=../x.md", raw=note(), content_type="text/markdown")

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["query", "name"]


def test_who_may_post_a_note(admin_api, viewer_api, anonymous_api):
    assert admin_api.post("/memory/veille", {"name": "a.md", "content": note()}).status_code == 201
    assert viewer_api.post("/memory/veille", {"name": "b.md", "content": note()}).status_code == 403
    assert anonymous_api.post("/memory/veille", {"name": "c.md", "content": note()}).status_code == 401
    assert list(VeilleNote.objects.values_list("path", flat=True)) == ["a.md"]
